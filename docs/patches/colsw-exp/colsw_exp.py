"""Session 52's colsw experiment: variants of v49.cuh (docs/patches/s51-colsw-variants.patch applied to v48) in one
module, checked against float64 (NaN-poisoned output) and timed beside cuDNN by GPU time (bench.gpu_time's method).

    python3 .exp/colsw/colsw_exp.py build|check|time|race NAMES   (NAMES: comma-separated keys of VARIANTS)

Kept in docs/patches/colsw-exp/ because .exp/ is git-ignored and a fresh checkout loses it; it runs from .exp/colsw/
(the repository is two levels up), beside v49.cuh (docs/patches/s52-colsw-variants.patch says how to recreate it).
COLSW_EXTRA='{"name": (knobs...)}' adds variants; COLSW_ROUNDS sets the interleaved timing rounds.
"""
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# knobs: NWG, WGI, ST, DIAG, GU, SI, CS, KBH, SS, GV
VARIANTS = {
    "q4gi": (4, 1, 0, 0, 1, 1, 0, 4, 0, 0),     # v48's copy
    "q4ss": (4, 1, 0, 0, 1, 1, 0, 4, 1, 0),     # rows staged, full-line stores
    "q4bk": (4, 1, 0, 0, 1, 1, 0, 4, 2, 0),     # rows staged, left by cp.async.bulk
    "q4gv": (4, 1, 0, 0, 1, 1, 0, 4, 0, 1),     # weights by 16-byte loads, transposed in registers
    "q4bkgv": (4, 1, 0, 0, 1, 1, 0, 4, 2, 1),   # both
    "q4ssgv": (4, 1, 0, 0, 1, 1, 0, 4, 1, 1),   # rows staged, full-line stores, GV
    "q4ssgvd3": (4, 1, 0, 3, 1, 1, 0, 4, 1, 1),  # no stores, GV (timing only)
    "q4d3": (4, 1, 0, 3, 1, 1, 0, 4, 0, 0),     # no stores (timing only)
    "q4d1": (4, 1, 0, 1, 1, 1, 0, 4, 0, 0),     # prologue only (timing only)
    "q4gvd1": (4, 1, 0, 1, 1, 1, 0, 4, 0, 1),   # prologue only, GV (timing only)
}
VARIANTS.update(eval(os.environ.get("COLSW_EXTRA", "{}")))
TIMING_ONLY = {k for k, v in VARIANTS.items() if v[3] != 0}
NAMES = list(VARIANTS)

SHAPES = {  # N, Cin, Cout, k, H, W, groups, bias
    "unet-128-64-n1": (1, 128, 64, 2, 256, 256, 1, False),
    "unet-128-64-n2-bias": (2, 128, 64, 2, 128, 128, 1, True),       # staged path, two images
    "ragged-96-40-n3": (3, 96, 40, 2, 20, 36, 1, True),              # pixels not a tile multiple, columns < 128
    "grouped-k3": (2, 64, 48, 3, 24, 40, 2, True),                    # odd width: single stores, groups
    "chunks-ragged-k4": (1, 72, 24, 4, 32, 64, 1, False),            # channels not a chunk multiple
    "unet-512-256-n8": (8, 128, 256, 2, 64, 64, 1, True),            # staged, several column tiles
}
MODES = {"fp32": (torch.float32, 1e-3), "fp16": (torch.float16, 1e-2), "bf16": (torch.bfloat16, 1e-2)}


def build():
    from torch.utils.cpp_extension import load
    knobs = "\n".join(f"    case {i}: launch_colsw<{', '.join(str(k) for k in v)}>(p, x, w, b, out, stream); break;"
                      for i, v in enumerate(VARIANTS.values()))
    src = ('#define XV_NS xv\n#include "v49.cuh"\nnamespace convt {\n'
           "void run_variant(int id, const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, "
           "const at::Tensor& b, at::Tensor& out, cudaStream_t stream) {\n  using namespace xv;\n  switch (id) {\n"
           f"{knobs}\n    default: TORCH_CHECK(false, \"no variant\");\n  }}\n}}\n}}\n")
    if not (HERE / "variants.cu").exists() or (HERE / "variants.cu").read_text() != src:  # unchanged: no rebuild
        (HERE / "variants.cu").write_text(src)
    bdir = Path(os.environ.get("COLSW_BUILD", "/tmp/colsw-exp"))
    bdir.mkdir(parents=True, exist_ok=True)
    inc = [str(ROOT / "kernels/csrc"), str(ROOT / "kernels/csrc/cuda"), str(HERE)]
    t = time.time()
    mod = load(name="colsw_exp", sources=[str(HERE / "bind.cpp"), str(HERE / "variants.cu")],
               extra_include_paths=inc, build_directory=str(bdir), verbose=False,
               extra_cflags=["-O2", "-std=c++20"],
               extra_cuda_cflags=["-O3", "-std=c++20", "--expt-relaxed-constexpr",
                                  "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas=-v"])
    print(f"built in {time.time() - t:.0f} s", flush=True)
    return mod


def make(shape, dtype, seed=0):
    n, cin, cout, k, h, w_, g, bias = shape
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.rand(n, cin, h, w_, device="cuda", generator=gen).to(dtype) - 0.5
    w = torch.randn(cin, cout // g, k, k, device="cuda", generator=gen).to(dtype)
    b = torch.randn(cout, device="cuda", generator=gen).to(dtype) if bias else None
    return x, w, b


def call(mod, i, x, w, b, k, g):
    out = torch.empty(x.shape[0], w.shape[1] * g, x.shape[2] * k, x.shape[3] * k, device="cuda", dtype=x.dtype)
    mod.run(i, x, w, b, [k, k], g, out)
    return out


def check(mod, names):
    bad = 0
    for sname, shape in SHAPES.items():
        k, g = shape[3], shape[6]
        for mode, (dtype, tol) in MODES.items():
            x, w, b = make(shape, dtype)
            ref = F.conv_transpose2d(x.double(), w.double(), None if b is None else b.double(), k, groups=g)
            for nm in names:
                if nm in TIMING_ONLY:
                    continue
                out = torch.full_like(ref, float("nan"), dtype=dtype)
                mod.run(NAMES.index(nm), x, w, b, [k, k], g, out)
                torch.cuda.synchronize()
                written = not bool(torch.isnan(out).any())
                rel = float((out.double() - ref).norm() / ref.norm())
                ok = written and rel < tol
                bad += not ok
                print(f"check {nm:8s} {sname:20s} {mode}: rel {rel:.1e} written {written} {'ok' if ok else 'FAIL'}",
                      flush=True)
    print("CHECK", "PASSED" if bad == 0 else f"FAILED {bad}", flush=True)
    return bad


# bench.gpu_time's method, not imported from there: importing bench.gpu_time imports kernels, which builds the whole
# extension (minutes on the device) that these variants do not need.
def gpu_us(fn, args_sets, reps=60):
    for i in range(5):
        fn(*args_sets[i % len(args_sets)])
    torch.cuda.synchronize()
    ev = []
    for i in range(reps):
        torch.cuda._sleep(400000)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(*args_sets[i % len(args_sets)])
        e.record()
        ev.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in ev)


def timing(mod, names, shapes=("unet-128-64-n1", "unet-512-256-n8")):
    torch.backends.cudnn.allow_tf32 = True
    print("| shape | mode | cuDNN | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for sname in shapes:
        shape = SHAPES[sname]
        k, g = shape[3], shape[6]
        for mode, (dtype, _) in MODES.items():
            sets = [make(shape, dtype, seed) for seed in range(4)]
            outs = [torch.empty(s[0].shape[0], s[1].shape[1] * g, s[0].shape[2] * k, s[0].shape[3] * k,
                                device="cuda", dtype=dtype) for s in sets]
            cud = gpu_us(lambda x, w, b, o: F.conv_transpose2d(x, w, b, k, groups=g), [(*s, o) for s, o in zip(sets, outs)])
            rounds = int(os.environ.get("COLSW_ROUNDS", "3"))
            per = {nm: [] for nm in names}
            for r in range(rounds):
                for nm in (names if r % 2 == 0 else names[::-1]):
                    i = NAMES.index(nm)
                    per[nm].append(gpu_us(lambda x, w, b, o: mod.run(i, x, w, b, [k, k], g, o),
                                          [(*s, o) for s, o in zip(sets, outs)]))
            row = [statistics.median(per[nm]) for nm in names]
            print(f"| {sname} | {mode} | {cud:.1f} | " + " | ".join(f"{t:.1f}" for t in row) + " |", flush=True)


def race(mod, names):
    # a small staged shape and a ragged one, once each, for compute-sanitizer
    for sname in ("unet-128-64-n2-bias", "ragged-96-40-n3"):
        shape = SHAPES[sname]
        for dtype in (torch.float32, torch.float16):
            x, w, b = make(shape, dtype)
            for nm in names:
                call(mod, NAMES.index(nm), x, w, b, shape[3], shape[6])
    torch.cuda.synchronize()
    print("race run done")


if __name__ == "__main__":
    cmd = sys.argv[1]
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else NAMES
    mod = build()
    if cmd == "check":
        sys.exit(1 if check(mod, names) else 0)
    if cmd == "time":
        timing(mod, names)
    if cmd == "race":
        race(mod, names)
