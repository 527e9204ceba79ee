"""Where a stack-kernel launch's time goes, block by block: the kernel built with its phase marks
(convt_stack.cu's CONVT_STACK_TRACE; bench/csrc/stack_trace.cu), one launch queued behind a sleep as
bench.gpu_time does, then per block its start against the first block's, its prologue (the first rows' loads, the
weights, the outputs' decode: up to the weights' barrier), each cell row (barrier to barrier) and its end.

    python -m bench.stack_trace [--cases fsrcnn-56-1-n1,probe-fsrcnn-n4-128] [--dtypes fp32,fp16]

Needs an sm_90 GPU; builds a module of its own (a minute or two) in the kernels' build directory.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import torch

import kernels  # noqa: F401  (builds and loads the main extension; CUDA_HOME resolved)
from kernels import _build
from bench.gpu_time import CASES

ROOT = Path(__file__).resolve().parent / "csrc"
STACK_CU = Path(_build.CSRC) / "cuda" / "convt_stack.cu"
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def load_module():
    flags = ["-O3", "-lineinfo", *_build.gencode_flags("9.0"), f"-I{_build.CSRC}"]
    key = "stack-trace|" + hashlib.sha256(STACK_CU.read_bytes()).hexdigest()[:16]
    return _build._load("stacktrace", ("stack_trace.cu",), ["-O3"], flags, [], key, root=ROOT, python_module=True)


def pct(t: torch.Tensor, q: float) -> float:
    return float(torch.quantile(t.double(), q))


def summarize(name: str, marks: torch.Tensor) -> list[str]:
    m = marks[marks[:, 0] > 0].double()
    t0 = m[:, 0].min()
    start_us, end_us = (m[:, 0] - t0) / 1e3, (m[:, 15] - t0) / 1e3
    # the SM clock, from each block's clock and globaltimer spans (globaltimer ticks are coarse: the median of many)
    ghz = float(((m[:, 14] - m[:, 2]) / (m[:, 15] - m[:, 0]).clamp(min=1)).median())
    cyc = lambda a, b: (m[:, b] - m[:, a]) / ghz / 1e3  # noqa: E731  us between two clock marks
    prologue = cyc(2, 3)
    rows = [cyc(3 + c, 4 + c) for c in range(10) if bool((m[:, 4 + c] > 0).any())]
    last = max(c for c in range(10) if bool((m[:, 4 + c] > 0).any()))
    tail = cyc(4 + last, 14)
    sms = int(m[:, 1].unique().numel())
    lines = [f"## {name}: {m.shape[0]} blocks on {sms} SMs, SM clock {ghz:.2f} GHz, "
             f"span {float(end_us.max()):.1f} us (first start to last end)",
             "| part | median us | p10 | p90 | max |", "|---|---|---|---|---|"]
    def row(label, t):
        lines.append(f"| {label} | {pct(t, .5):.2f} | {pct(t, .1):.2f} | {pct(t, .9):.2f} | {float(t.max()):.2f} |")
    row("block start after the first", start_us)
    row("prologue (to the weights' barrier)", prologue)
    for c, t in enumerate(rows):
        row(f"cell row {c}", t[t > 0] if c else t)
    row("after the traced rows to the end", tail)
    row("block time (start to end)", cyc(2, 14))
    row("block end after the first start", end_us)
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.stack_trace")
    ap.add_argument("--cases", default="fsrcnn-56-1-n1,probe-fsrcnn-n4-128")
    ap.add_argument("--dtypes", default="fp32,fp16")
    a = ap.parse_args(argv)
    mod = load_module()
    out = []
    for name in a.cases.split(","):
        n, cin, cout, k, hw, s, p, op_, d, g = CASES[name]
        for dn in a.dtypes.split(","):
            dt = DTYPES[dn]
            xs = [torch.randn(n, cin, *hw, device="cuda", dtype=dt) for _ in range(4)]
            w = torch.randn(cin, cout // g, *k, device="cuda", dtype=dt)
            args = (list(s), list(p), list(op_), g, list(d))
            for i in range(8):
                mod.traced(xs[i % 4], w, *args)
            torch.cuda.synchronize()
            torch.cuda._sleep(400000)
            y, marks = mod.traced(xs[0], w, *args)
            torch.cuda.synchronize()
            ref = torch.nn.functional.conv_transpose2d(xs[0].double(), w.double(), None, s, p, op_, g, d)
            err = float((y.double() - ref).abs().max() / ref.abs().max())
            out += summarize(f"{name} {dn} (max error / max |ref| {err:.1e})", marks.cpu())
            out.append("")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
