"""GPU time alone, ours beside cuDNN: each call queued behind a `torch.cuda._sleep`, so the host's time hides under
it and the CUDA events around the call time the GPU alone (what a harness that flushes L2 between calls sees).
bench.run times host and GPU together; this is the other method, for the layers where the two disagree.

    python -m bench.gpu_time [--cases dcgan-128-64-n1,dcgan-512-256-n64] [--algos auto,colsc1,colsc2,colsc4]

Per case and precision mode: cuDNN's median microseconds, then ours under each CONVT_CUDA_ALGO, then the worst
relative error against float64 over those paths (output NaN-poisoned first) and whether every element was written.
"""

from __future__ import annotations

import argparse
import os
import statistics

import torch
import torch.nn.functional as F

import kernels
from bench.problems import DECODER_LAYERS, KERNELBENCH_CASES
from bench.run import MODES
from bench.variants import check

# Shapes beside the suites' layers in the domain of the strided 1-4 output-channel kernels (cells, taps), for their
# pick: FSRCNN and DCGAN 64->3 at other batches and sizes, 4 output channels (64 products a pixel), grouped 6x6
# stride 2 (3 offsets a axis), and a 4x3 kernel at strides (2, 1) (2 and 3 offsets: the taps kernel's any-offset form).
PROBES = {
    "probe-fsrcnn-n4-128": (4, 56, 1, (9, 9), (128, 128), (3, 3), (4, 4), (2, 2), (1, 1), 1),
    "probe-dcgan-64-3-n1": (1, 64, 3, (4, 4), (32, 32), (2, 2), (1, 1), (0, 0), (1, 1), 1),
    "probe-32-4-k4s2-n8": (8, 32, 4, (4, 4), (64, 64), (2, 2), (1, 1), (0, 0), (1, 1), 1),
    "probe-128-4-k6s2-g2-n2": (2, 128, 4, (6, 6), (48, 48), (2, 2), (2, 2), (0, 0), (1, 1), 2),
    "probe-32-2-k4x3s2x1-n2": (2, 32, 2, (4, 3), (80, 80), (2, 1), (1, 1), (0, 0), (1, 1), 1),
    "probe-24-1-k8s4-n2": (2, 24, 1, (8, 8), (96, 96), (4, 4), (2, 2), (0, 0), (1, 1), 1),
    # stride 1, 3 kernel rows, 32 output channels a group or fewer, under 15 taps: the window kernel's TF32 domain
    "probe-32-32-k3-n2": (2, 32, 32, (3, 3), (256, 256), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    "probe-16-32-k3x2-n4": (4, 16, 32, (3, 2), (128, 512), (1, 1), (1, 0), (0, 0), (1, 1), 1),
    "probe-64-64-k3-g2-n8": (8, 64, 64, (3, 3), (128, 128), (1, 1), (1, 1), (0, 0), (1, 1), 2),
    "probe-32-24-k3x4-n1": (1, 32, 24, (3, 4), (512, 512), (1, 1), (1, 1), (0, 0), (1, 1), 1),
    # kb71 with padding 1: the same bytes, but output rows of 1024 floats (kb71's 1026 put every 32-byte run of a
    # store across two sectors); and kb71 at a quarter of its batch (270 MB), between the probes and kb71 in size
    "probe-kb71-p1": (8, 32, 32, (3, 3), (512, 1024), (1, 1), (1, 1), (0, 0), (1, 1), 1),
    "probe-kb71-n2": (2, 32, 32, (3, 3), (512, 1024), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    # kb78 with padding (1, 2): rows of 1026 floats, off sectors, at 21 taps
    "probe-kb78-p12": (8, 32, 32, (3, 7), (512, 1024), (1, 1), (1, 2), (0, 0), (1, 1), 1),
}
CASES = {**KERNELBENCH_CASES, **DECODER_LAYERS, **PROBES}


def gpu_us(fn, args_sets, reps: int = 40) -> float:
    for i in range(5):
        fn(*args_sets[i % len(args_sets)])
    torch.cuda.synchronize()
    events = []
    for i in range(reps):
        torch.cuda._sleep(400000)  # ~0.2 ms: longer than the host needs to queue the call
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(*args_sets[i % len(args_sets)])
        e.record()
        events.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in events)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gpu_time")
    ap.add_argument("--cases", default="dcgan-128-64-n1,dcgan-512-256-n64")
    ap.add_argument("--modes", default="fp32,strict,fp16,bf16")
    ap.add_argument("--algos", default="auto,colsc1,colsc2,colsc4")
    a = ap.parse_args(argv)
    unknown = sorted(set(a.cases.split(",")) - set(CASES))
    if unknown:
        ap.error(f"unknown cases {unknown}; known: {', '.join(CASES)}")
    assert torch.cuda.is_available(), "GPU time needs a CUDA device"
    algos = a.algos.split(",")
    print("| case | mode | cuDNN us | " + " | ".join(algos) + " | worst rel err | all written |")
    print("|---|---|---|" + "---|" * len(algos) + "---|---|")
    for name in a.cases.split(","):
        shape = CASES[name]
        n, cin, cout, k, hw, s, p, op, d, g = shape
        for mode in a.modes.split(","):
            dtype, tf32, _ = MODES[mode]
            torch.backends.cudnn.allow_tf32 = tf32
            w = torch.randn(cin, cout // g, *k, device="cuda").to(dtype)
            xs = [torch.rand(n, cin, *hw, device="cuda").to(dtype) for _ in range(4)]
            args = [(x, w, None, s, p, op, g, d) for x in xs]
            os.environ.pop("CONVT_CUDA_ALGO", None)
            cudnn = gpu_us(F.conv_transpose2d, args)
            times, worst, written = [], 0.0, True
            for algo in algos:
                os.environ["CONVT_CUDA_ALGO"] = algo
                rel, ok = check(xs[0], w, shape)
                worst, written = max(worst, rel), written and ok
                times.append(gpu_us(kernels.conv_transpose2d, args))
            os.environ.pop("CONVT_CUDA_ALGO", None)
            print(f"| {name} | {mode} | {cudnn:.1f} | " + " | ".join(f"{t:.1f}" for t in times)
                  + f" | {worst:.1e} | {written} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
