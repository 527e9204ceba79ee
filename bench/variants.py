"""Every CUDA code path of ours on the same cases, beside cuDNN, in one run.

    python -m bench.variants [--suite kernelbench|decoder|all] [--modes fp32,strict,fp16,bf16]
                             [--cases kb81,...] [--algos ffma,strip,tc32,tc64,tc128,wg32,wg64,wg64t,wg128,wg128t,wgh32,wgh64,wgh64s,wgh128,auto] [--out DIR] [--repeats 15]

Forces each path with CONVT_CUDA_ALGO (read by the op on every call), checks it
against float64 on a NaN-poisoned output, and times it with the suite's method.
This is how the heuristic in convt_cuda.cu is chosen; bench.run measures only
what the heuristic picks.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
import torch.nn.functional as F

import kernels
from bench.problems import DECODER_LAYERS, KERNELBENCH_CASES
from bench.run import L2_BYTES, MODES, time_ms


def check(x, w, shape) -> tuple[float, bool]:
    n, cin, cout, k, hw, s, p, op, d, g = shape
    out = torch.full((n, cout, *kernels.ops.output_size(hw, k, s, p, op, d)), float("nan"),
                     device="cuda", dtype=x.dtype)
    kernels.ops.conv_transpose2d_out(x, w, None, s, p, op, g, d, out=out)
    ref = F.conv_transpose2d(x.double(), w.double(), None, s, p, op, g, d)
    written = not bool(torch.isnan(out).any())
    rel = float((out.double() - ref).norm() / ref.norm())
    return rel, written


def run(name, shape, mode, algos, repeats) -> list[dict]:
    dtype, tf32, _ = MODES[mode]
    torch.backends.cudnn.allow_tf32 = tf32
    n, cin, cout, k, hw, s, p, op, d, g = shape
    w = torch.randn(cin, cout // g, *k, device="cuda").to(dtype)
    x_bytes = n * cin * hw[0] * hw[1] * w.element_size()
    sets = max(1, min(8, L2_BYTES // max(x_bytes, 1)))
    xs = [torch.rand(n, cin, *hw, device="cuda").to(dtype) for _ in range(sets)]
    args = [(x, w, None, s, p, op, g, d) for x in xs]
    cudnn = time_ms(F.conv_transpose2d, args, repeats)
    x = torch.rand(n, cin, *hw, device="cuda").to(dtype)
    rows = []
    for algo in algos:
        os.environ["CONVT_CUDA_ALGO"] = algo
        rel, written = check(x, w, shape)
        ms = time_ms(kernels.conv_transpose2d, args, repeats)
        rows.append({"case": name, "mode": mode, "algo": algo, "ms": ms, "cudnn_ms": cudnn,
                     "speedup": cudnn / ms, "rel_error": rel, "all_written": written})
    os.environ.pop("CONVT_CUDA_ALGO", None)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", choices=["kernelbench", "decoder", "all"], default="all")
    ap.add_argument("--modes", default="fp32,strict,fp16,bf16")
    ap.add_argument("--algos", default="ffma,tc32,tc64,tc128,wg32,wg64,wg64t,wg128,wg128t,wgh32,wgh64,wgh64s,wgh128,auto")
    ap.add_argument("--cases", default="", help="comma-separated case names (kb81, dcgan-64-3-n64, ...); all by default")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    cases = {}
    if a.suite in ("kernelbench", "all"):
        cases.update(KERNELBENCH_CASES)
    if a.suite in ("decoder", "all"):
        cases.update(DECODER_LAYERS)
    if a.cases:
        wanted = a.cases.split(",")
        unknown = sorted(set(wanted) - set(cases))
        if unknown:
            ap.error(f"unknown cases {unknown}; known: {sorted(cases)}")
        cases = {k: cases[k] for k in wanted}
    algos = a.algos.split(",")
    rows = []
    for mode in a.modes.split(","):
        for name, shape in cases.items():
            rows += run(name, shape, mode, algos, a.repeats)
            torch.cuda.empty_cache()
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "variants.json").write_text(json.dumps(rows, indent=1))
    # One line per case and mode: cuDNN, then each path's ms / speedup / error.
    print(f"{'case':<20}{'mode':<7}{'cudnn':>8} " + " ".join(f"{al:>24}" for al in algos))
    for i in range(0, len(rows), len(algos)):
        group = rows[i:i + len(algos)]
        r0 = group[0]
        cells = []
        for r in group:
            flag = "" if r["all_written"] else "!UNWRITTEN"
            cells.append(f"{r['ms']:8.3f} {r['speedup']:5.2f}x {r['rel_error']:7.1e}{flag}")
        print(f"{r0['case']:<20}{r0['mode']:<7}{r0['cudnn_ms']:8.3f} " + " ".join(f"{c:>24}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
