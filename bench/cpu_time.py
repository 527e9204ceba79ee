"""The CPU kernel beside aten's (oneDNN) on the default model: whole forwards of dcgan at a few batch sizes,
and each of its transposed convolutions at the largest, with the same weights. Median of fresh random
inputs (never zeros) after a warm-up; the threads are torch's (--threads to pin them).

    python -m bench.cpu_time [--batches 1,16,660] [--threads 2]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
import torch.nn as nn

from kernels.nn import swap_conv_transpose2d
from models.registry import load_model


def median_ms(fn, make_input, runs: int) -> float:
    fn(make_input())
    times = []
    for _ in range(runs):
        x = make_input()
        t0 = time.perf_counter()
        fn(x)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="1,16,660")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    batches = [int(b) for b in args.batches.split(",")]
    aten = load_model().module.eval()
    ours = copy.deepcopy(aten)
    swap_conv_transpose2d(ours)
    rows = []
    with torch.inference_mode():
        for n in batches:
            runs = 20 if n <= 16 else 3
            make = lambda n=n: torch.randn(n, 100, 1, 1)  # noqa: E731
            a, o = median_ms(aten, make, runs), median_ms(ours, make, runs)
            rows.append((f"dcgan forward, batch {n}", o, a))
        n = batches[-1]
        x = torch.randn(n, 100, 1, 1)
        for name, theirs in ((k, m) for k, m in aten.named_modules() if isinstance(m, nn.ConvTranspose2d)):
            layer = ours.get_submodule(name)
            shape = (n, theirs.in_channels, *x.shape[2:])
            make = lambda s=shape: torch.randn(*s)  # noqa: E731
            rows.append((f"{name}: {list(shape)} -> {theirs.out_channels} ch", median_ms(layer, make, 3),
                         median_ms(theirs, make, 3)))
            x = theirs(make())
    print(f"threads: {torch.get_num_threads()}, {torch.__version__}")
    print("| case | ours (ms) | aten (ms) | aten / ours |")
    print("|---|---|---|---|")
    for name, o, a in rows:
        print(f"| {name} | {o:.1f} | {a:.1f} | {a / o:.2f}x |")


if __name__ == "__main__":
    main()
