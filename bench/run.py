"""Our ConvTranspose2d against cuDNN, side by side in one run, on one GPU.

    python -m bench.run [--suite kernelbench|decoder|all] [--modes fp32,strict,fp16,bf16]
                        [--out docs/benchmarks] [--repeats 25]

Per case and precision mode: median ms of ours and of cuDNN (CUDA events around
each call, warm-up first, fresh random inputs — never zeros — rotated where a set
fits in L2), the speedup, percent of the floor, and our relative error against
float64. The floor is max(bytes / copy rate, FLOPs / matmul rate), both rates
measured on this card in this run. Writes results.json and results.md under
--out (and a chart when matplotlib is there) and prints the table last.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import kernels
from bench.problems import DECODER_LAYERS, KERNELBENCH_CASES

MODES = {  # mode -> (dtype, allow_tf32, matmul-rate key)
    "fp32": (torch.float32, True, "tf32"),
    "strict": (torch.float32, False, "fp32"),
    "fp16": (torch.float16, True, "fp16"),
    "bf16": (torch.bfloat16, True, "bf16"),
}
L2_BYTES = 50 * 2**20


def time_ms(fn, args_sets, repeats: int, warmup: int = 5) -> float:
    """Median of per-call CUDA-event times, cycling through the input sets."""
    for i in range(warmup):
        fn(*args_sets[i % len(args_sets)])
    torch.cuda.synchronize()
    times = []
    for i in range(repeats):
        a = args_sets[i % len(args_sets)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*a)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def ceilings() -> dict[str, float]:
    """Copy bandwidth (bytes read + written per second) and matmul rates, measured here."""
    out = {}
    src = torch.rand(2**28 // 4 * 4, device="cuda")  # 1 GiB of fp32
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), [()], 20)
    out["copy_GBps"] = 2 * src.numel() * 4 / ms / 1e6
    del src, dst
    n = 8192
    for key, dtype, tf32 in (("tf32", torch.float32, True), ("fp32", torch.float32, False),
                             ("fp16", torch.float16, True), ("bf16", torch.bfloat16, True)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        ms = time_ms(torch.mm, [(a, b)], 10 if key != "fp32" else 5, warmup=2)
        out[f"{key}_TFLOPs"] = 2 * n**3 / ms / 1e9
    torch.backends.cuda.matmul.allow_tf32 = False
    return out


def floor_ms(shape, elem_bytes: int, rate_tflops: float, copy_gbps: float) -> float:
    n, cin, cout, k, hw, s, p, op, d, g = shape
    ho, wo = kernels.ops.output_size(hw, k, s, p, op, d)
    bytes_moved = elem_bytes * (n * cin * hw[0] * hw[1] + cin * (cout // g) * k[0] * k[1] + n * cout * ho * wo)
    flops = 2 * n * cin * hw[0] * hw[1] * (cout // g) * k[0] * k[1]
    return max(bytes_moved / copy_gbps / 1e6, flops / rate_tflops / 1e9)


def run_case(name, shape, mode, repeats, ceil) -> dict:
    dtype, tf32, rate_key = MODES[mode]
    torch.backends.cudnn.allow_tf32 = tf32
    n, cin, cout, k, hw, s, p, op, d, g = shape
    w = torch.randn(cin, cout // g, *k, device="cuda").to(dtype)
    x_bytes = n * cin * hw[0] * hw[1] * w.element_size()
    sets = max(1, min(8, L2_BYTES // max(x_bytes, 1)))  # rotate inputs that would sit in L2
    xs = [torch.rand(n, cin, *hw, device="cuda").to(dtype) for _ in range(sets)]
    args = [(x, w, None, s, p, op, g, d) for x in xs]
    ours = time_ms(kernels.conv_transpose2d, args, repeats)
    cudnn = time_ms(F.conv_transpose2d, args, repeats)
    # accuracy on a fresh input, against float64
    x = torch.rand(n, cin, *hw, device="cuda").to(dtype)
    y = kernels.conv_transpose2d(x, w, None, s, p, op, g, d).double()
    ref = F.conv_transpose2d(x.double(), w.double(), None, s, p, op, g, d)
    rel = float((y - ref).norm() / ref.norm())
    del y, ref, x, xs
    fl = floor_ms(shape, w.element_size(), ceil[f"{rate_key}_TFLOPs"], ceil["copy_GBps"])
    return {"case": name, "mode": mode, "ours_ms": ours, "cudnn_ms": cudnn, "speedup": cudnn / ours,
            "floor_ms": fl, "pct_of_floor": 100 * fl / ours, "rel_error": rel, "input_sets": sets}


def markdown(rows, ceil, meta) -> str:
    lines = [
        f"Device: {meta['device']}; torch {meta['torch']}, CUDA {meta['cuda']}, cuDNN {meta['cudnn']}.",
        f"Ceilings measured in this run: copy {ceil['copy_GBps']:.0f} GB/s, TF32 {ceil['tf32_TFLOPs']:.0f}, "
        f"FP32 {ceil['fp32_TFLOPs']:.1f}, FP16 {ceil['fp16_TFLOPs']:.0f}, BF16 {ceil['bf16_TFLOPs']:.0f} TFLOP/s.",
        f"Command: `{meta['command']}`",
        "",
        "| case | mode | ours ms | cuDNN ms | speedup | floor ms | % of floor | rel err vs fp64 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['case']} | {r['mode']} | {r['ours_ms']:.3f} | {r['cudnn_ms']:.3f} | {r['speedup']:.2f}x | "
                     f"{r['floor_ms']:.3f} | {r['pct_of_floor']:.0f}% | {r['rel_error']:.1e} |")
    # The targets are per suite: the KernelBench problems (kb*) and the decoder layers apart, then all.
    suites = [("KernelBench", lambda c: c.startswith("kb")), ("decoder layers", lambda c: not c.startswith("kb")),
              ("all", lambda c: True)]
    for suite, member in suites:
        for mode in sorted({r["mode"] for r in rows}):
            sp = [r["speedup"] for r in rows if r["mode"] == mode and member(r["case"])]
            if sp and (suite == "all" or len(sp) < len(rows)):
                gm = torch.tensor(sp).log().mean().exp().item()
                lines.append(f"\nGeometric mean speedup, {suite}, {mode}: {gm:.2f}x over {len(sp)} cases")
    return "\n".join(lines)


def chart(rows, path: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    modes = sorted({r["mode"] for r in rows})
    cases = list(dict.fromkeys(r["case"] for r in rows))
    fig, ax = plt.subplots(figsize=(max(8, len(cases) * 0.9), 4.5))
    width = 0.8 / len(modes)
    for j, mode in enumerate(modes):
        vals = {r["case"]: r for r in rows if r["mode"] == mode}
        xs = [i + j * width for i, c in enumerate(cases) if c in vals]
        ax.bar(xs, [vals[c]["speedup"] for c in cases if c in vals], width, label=mode)
        # the floor: the speedup a kernel running at the floor would show
        ax.scatter(xs, [vals[c]["cudnn_ms"] / vals[c]["floor_ms"] for c in cases if c in vals],
                   marker="_", s=200, color="black", zorder=3)
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks([i + width * (len(modes) - 1) / 2 for i in range(len(cases))], cases, rotation=30, ha="right")
    ax.set_ylabel("speedup over cuDNN (log); black tick = at floor")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run")
    ap.add_argument("--suite", default="all", choices=["kernelbench", "decoder", "all"])
    ap.add_argument("--modes", default="fp32,strict,fp16,bf16")
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--out", default="docs/benchmarks")
    args = ap.parse_args(argv)
    assert torch.cuda.is_available(), "the benchmark needs a CUDA device"
    cases = {}
    if args.suite in ("kernelbench", "all"):
        cases.update(KERNELBENCH_CASES)
    if args.suite in ("decoder", "all"):
        cases.update(DECODER_LAYERS)
    t0 = time.time()
    ceil = ceilings()
    rows = []
    for mode in args.modes.split(","):
        for name, shape in cases.items():
            r = run_case(name, shape, mode, args.repeats, ceil)
            rows.append(r)
            print(f"{name:20} {mode:6} ours {r['ours_ms']:8.3f} ms  cuDNN {r['cudnn_ms']:8.3f} ms  "
                  f"{r['speedup']:5.2f}x  floor {r['pct_of_floor']:5.1f}%  rel {r['rel_error']:.1e}", flush=True)
            torch.cuda.empty_cache()
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "seconds": round(time.time() - t0, 1),
            "command": "python -m bench.run " + " ".join(argv if argv is not None else __import__("sys").argv[1:]),
            "build": kernels.build_info()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"meta": meta, "ceilings": ceil, "rows": rows}, indent=1))
    table = markdown(rows, ceil, meta)
    (out / "results.md").write_text(table + "\n")
    chart(rows, out / "speedup.png")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
