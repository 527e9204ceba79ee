"""Where a served forward's time goes: ``Runtime._forward`` (concatenate, copy in, model, copy out,
synchronize, split) for k batch-1 dcgan requests, op by op and replayed from a CUDA graph, beside the bare
module on device-resident input with our kernel and with torch's (cuDNN). Medians of wall time over repeated
calls; fresh random inputs each call.

    python -m bench.runtime_forward [--device cuda] [--batches 1,8,32] [--repeats 200]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import kernels
import models
from service.runtime import Runtime


def _median_ms(fn, repeats: int, sync) -> float:
    for _ in range(10):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--model", default="dcgan")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--repeats", type=int, default=200)
    a = ap.parse_args(argv)
    device = torch.device(a.device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    ours = models.load_model(a.model)
    ours.module.to(device).eval()
    theirs = models.load_model(a.model).module.to(device).eval()
    kernels.swap_conv_transpose2d(ours.module)
    rt = Runtime(ours, device, torch.float32, {}, [], kernels.build_info())
    replay = Runtime(ours, device, torch.float32, {}, [], kernels.build_info(), graph_shapes=64)
    shape = ours.example_inputs[0].shape[1:]
    print("| batch | Runtime._forward ms | the same, CUDA graph | our module ms | torch module ms |")
    print("|---|---|---|---|---|")
    try:
        for b in (int(x) for x in a.batches.split(",")):
            reqs = [[torch.randn(1, *shape)] for _ in range(b)]
            fwd = _median_ms(lambda: rt._forward([[torch.randn_like(r[0])] for r in reqs]), a.repeats, sync)
            graphed = (_median_ms(lambda: replay._forward([[torch.randn_like(r[0])] for r in reqs]), a.repeats, sync)
                       if device.type == "cuda" else float("nan"))
            x = torch.randn(b, *shape, device=device)
            with torch.inference_mode():
                mod = _median_ms(lambda: ours.module(x.normal_()), a.repeats, sync)
                ref = _median_ms(lambda: theirs(x.normal_()), a.repeats, sync)
            print(f"| {b} | {fwd:.3f} | {graphed:.3f} | {mod:.3f} | {ref:.3f} |", flush=True)
    finally:
        rt.close()
        replay.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
