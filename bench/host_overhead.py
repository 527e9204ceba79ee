"""Host time per call of the op, by entry point and grad mode, beside torch's (cuDNN): back-to-back calls on
a small problem (the GPU keeps up, so wall time over calls is the host's), then the per-call CUDA-event time
bench/run.py takes (start, call, end, sync). Medians of 5 runs of 500 calls.

    python -m bench.host_overhead [--case dcgan-128-64-n1,...]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time

import torch
import torch.nn.functional as F

import kernels
from bench.problems import DECODER_LAYERS, PROBLEMS

CASES = {**PROBLEMS, **DECODER_LAYERS}


def per_call_us(fn, args, calls: int = 500, runs: int = 5) -> float:
    for _ in range(20):
        fn(*args)
    torch.cuda.synchronize()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        out.append((t1 - t0) / calls * 1e6)
    return statistics.median(out)


def event_us(fn, args, repeats: int = 200) -> float:
    times = []
    for _ in range(repeats):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(*args)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="dcgan-128-64-n1,dcgan-64-3-n64,fsrcnn-56-1-n1")
    a = ap.parse_args(argv)
    op = torch.ops.convt.conv_transpose2d.default
    print("| case | entry | grad mode | host us/call | event us/call |")
    print("|---|---|---|---|---|")
    for name in a.case.split(","):
        n, cin, cout, k, hw, s, p, op_, d, g = CASES[name]
        w = torch.randn(cin, cout // g, *k, device="cuda")
        x = torch.randn(n, cin, *hw, device="cuda")
        args = (x, w, None, s, p, op_, g, d)
        entries = {"torch F.conv_transpose2d": F.conv_transpose2d, "kernels.conv_transpose2d": kernels.conv_transpose2d,
                   "torch.ops...default": op}
        # What a call's host time is made of, each alone: the output's allocation, one launch through a torch op,
        # and our op's argument parse, checks and path pick without the allocation or the launch.
        out = kernels.conv_transpose2d(*args)
        parts = {"(part) torch.empty of the output": lambda *_: torch.empty(out.shape, device="cuda"),
                 "(part) one-kernel torch op (out.add_(1))": lambda *_: out.add_(1),
                 "(part) torch.ops.convt.cuda_path": lambda x, w, b, *rest: torch.ops.convt.cuda_path(x, w, *rest)}
        for entry, fn in parts.items():
            print(f"| {name} | {entry} | default | {per_call_us(fn, args):.1f} | {event_us(fn, args):.1f} |", flush=True)
        for mode, ctx in (("default", contextlib.nullcontext), ("no_grad", torch.no_grad),
                          ("inference_mode", torch.inference_mode)):
            for entry, fn in entries.items():
                with ctx():
                    print(f"| {name} | {entry} | {mode} | {per_call_us(fn, args):.1f} | {event_us(fn, args):.1f} |",
                          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
