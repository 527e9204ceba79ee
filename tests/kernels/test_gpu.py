"""CUDA kernel tests: skipped where CUDA is absent, run on a GPU machine."""

import os
import re
import random
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import kernels
from kernels.ops import conv_transpose2d_out

from .cases import Case, poisoned_out, random_case, reference, rel_error
from bench.problems import DECODER_LAYERS, PROBLEMS

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

# Tolerances vs float64 (relative, Frobenius): exact fp32 (FFMA or 3xTF32) 1e-5;
# TF32 products 1e-3; half types accumulate in fp32 and round once on store.
TOL = {"float64": 1e-12, "float32": 1e-5, "float32-tf32": 1e-3, "float16": 1e-2, "bfloat16": 1e-2}
DTYPES = list(TOL)
TORCH_DTYPE = {"float64": torch.float64, "float32": torch.float32, "float32-tf32": torch.float32,
               "float16": torch.float16, "bfloat16": torch.bfloat16}
# Every CUDA path, forced: the FFMA kernel, the mma.sync kernel's three tiles and
# the wgmma kernel's five (Hopper).
WG_ALGOS = ["wg32", "wg64", "wg64t", "wg128", "wg128t"]
# The halo kernel's four (Hopper, TF32; problems it cannot take fall back to wg).
WGH_ALGOS = ["wgh32", "wgh64", "wgh64s", "wgh128"]
# The strip kernel's channel tiles (4, its pick, 16, 32), on tensor cores where the precision allows them, and its
# pick on FFMA in every precision.
STRIP_ALGOS = ["strip4", "strip", "strip16", "strip32", "stripf"]
# Precisions in which the strip kernel's products run on tensor cores (cuda_path "strip"; "stripf" on FFMA).
STRIP_MMA_PRECISIONS = ("float32-tf32", "float16", "bfloat16")


def strip_path(algo: str, precision: str) -> str:
    """The path name a case forced onto the strip kernel reports."""
    return "stripf" if algo == "stripf" and precision in STRIP_MMA_PRECISIONS else "strip"
# The rows kernel's tiles: outputs a thread, and k warps splitting the input channels.
ROWS_ALGOS = ["rows4", "rows8", "rows4k2", "rows8k4", "rows8k8"]
# The patch kernel: its own split, then one, two and four warps splitting a chunk's input channels.
PATCH_ALGOS = ["patch", "patchk1", "patchk2", "patchk4"]
ALGOS = ["ffma", *ROWS_ALGOS, "patchk1", "patchk4", *STRIP_ALGOS, "tc32", "tc64", "tc128", *WG_ALGOS, *WGH_ALGOS]
# wgmma runs fp32 only as TF32; the other precisions fall back to mma.sync.
WG_PRECISIONS = ("float32-tf32", "float16", "bfloat16")


def wgmma_expected(prec: str) -> bool:
    """Whether a forced wg* path must really run wgmma here (an sm_90 device)."""
    algo = os.environ.get("CONVT_CUDA_ALGO", "")
    return algo.startswith("wg") and prec in WG_PRECISIONS and torch.cuda.get_device_capability() == (9, 0)


@pytest.fixture(params=ALGOS)
def algo(request, monkeypatch):
    monkeypatch.setenv("CONVT_CUDA_ALGO", request.param)
    return request.param


@pytest.fixture
def precision(request):
    """Sets cuDNN's TF32 switch, which our op follows, for the given precision."""
    old = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = request.param == "float32-tf32"
    yield request.param
    torch.backends.cudnn.allow_tf32 = old


def path_taken(case: Case, dtype) -> str:
    """The CUDA path the op picks for this case's operands (under the current CONVT_CUDA_ALGO and TF32 switch)."""
    x, w, _ = case.tensors(dtype, "cuda", torch.Generator().manual_seed(0))
    return torch.ops.convt.cuda_path(x, w, *case.args())


def check_cuda(case: Case, prec: str, seed: int, out_offset: int = 0, ref_device: str = "cpu") -> float:
    """out_offset: elements before the output in its buffer, so its rows start off 16-byte boundaries;
    ref_device: where the float64 reference runs (the CPU takes seconds a layer at decoder sizes)."""
    dtype = TORCH_DTYPE[prec]
    gen = torch.Generator().manual_seed(seed)
    x, w, b = case.tensors(dtype, "cuda", gen)
    ref = reference(x, w, b, case, ref_device)
    ctx = f"CONVT_TEST_SEED={seed} {prec} CONVT_CUDA_ALGO={os.environ.get('CONVT_CUDA_ALGO')} {case}"
    if wgmma_expected(prec):
        # a halo tile falls back to wg where the input is not TMA-aligned (width % 4)
        allowed = ("wgh", "wg") if os.environ["CONVT_CUDA_ALGO"].startswith("wgh") else ("wg",)
        assert torch.ops.convt.cuda_path(x, w, *case.args()) in allowed, f"fell back: {ctx}"
    out = poisoned_out(case, dtype, "cuda")
    if out_offset:
        out = torch.full((out.numel() + out_offset,), float("nan"), dtype=dtype, device="cuda")[out_offset:].view(out.shape)
    conv_transpose2d_out(x, w, b, *case.args(), out=out)
    torch.cuda.synchronize()
    assert not torch.isnan(out).any(), f"unwritten output elements: {ctx}"
    err = rel_error(out, ref)
    assert err <= TOL[prec], f"rel error {err:.3e} > {TOL[prec]:.0e}: {ctx}"
    functional = kernels.conv_transpose2d(x, w, b, *case.args())
    assert torch.equal(functional, out), ctx
    return err


def stride1_case(rng, base, k, d, g, cin_g, cout_g, width, max_h) -> Case:
    """A stride-1 case of this kernel, dilation, groups, channels a group and width: batch 1-3, height 1 to max_h,
    padding up to the kernel's extent, a legal output padding; bias, batching and contiguity as `base`'s."""
    case = Case(rng.choice([1, 2, 3]), cin_g * g, cout_g * g, k, (rng.randint(1, max_h), width), (1, 1),
                (rng.randint(0, d[0] * k[0]), rng.randint(0, d[1] * k[1])),
                tuple(rng.randrange(di) for di in d), d, g, base.bias, base.unbatched,
                noncontiguous=base.noncontiguous)
    if case.unbatched:
        case.n = 1
    return case


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(60))
def test_random_configs_cuda(seed, precision, i, algo):
    if algo in WG_ALGOS and precision not in WG_PRECISIONS:
        pytest.skip("wgmma takes TF32, fp16 and bf16; the others fall back to the tc tests' path")
    if algo in WGH_ALGOS and precision not in ("float32-tf32", "float16"):
        pytest.skip("the halo kernel takes TF32 only; fp16 checks its fallback, the wg tests cover the rest")
    rng = random.Random(seed * 1000 + i)
    check_cuda(random_case(rng, max_hw=12, max_ch=6), precision, seed * 1000 + i)


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
def test_wide_channels_and_large_images_cuda(seed, precision, algo):
    """Channel counts past one chunk/tile and images past one block of outputs."""
    cases = [
        Case(2, 70, 37, (3, 3), (33, 47), (1, 1), (1, 1), (0, 0), (1, 1), 1, True),
        Case(1, 64, 48, (4, 4), (20, 20), (2, 2), (1, 1), (0, 0), (1, 1), 2, True),
        Case(3, 48, 48, (4, 4), (19, 23), (2, 2), (1, 1), (1, 1), (1, 1), 48, True),
        Case(1, 9, 18, (5, 3), (40, 31), (3, 2), (2, 1), (2, 1), (1, 2), 3, False, noncontiguous=True),
        Case(2, 33, 130, (2, 3), (21, 9), (1, 2), (0, 1), (0, 1), (1, 1), 1, True),
        Case(1, 96, 200, (3, 3), (8, 70), (5, 5), (1, 1), (0, 0), (2, 2), 2, False),
    ]
    for j, case in enumerate(cases):
        check_cuda(case, precision, seed + j)


@pytest.mark.parametrize("precision", ["float32-tf32"], indirect=True)
@pytest.mark.parametrize("i", range(40))
@pytest.mark.parametrize("algo", WGH_ALGOS, indirect=True)
def test_halo_kernel_cuda(seed, precision, i, algo):
    """Random problems the halo kernel takes (width a multiple of 4), forced onto it on
    Hopper: several chunks and channel tails, groups, strides, dilations, padding,
    pure-fill phases, phases narrower and wider than a 64-column tile."""
    rng = random.Random(seed * 7919 + i)
    case = random_case(rng, max_hw=6, max_ch=2)
    # the halo box must fit the image (at most 17 rows x 114 columns here) and a
    # 32-channel chunk the group
    hw = (rng.randint(17, 40), 4 * rng.randint(29, 64))
    cin_g = rng.choice([32, 33, 40, 64, 70])
    cout_g = rng.choice([1, 5, 16, 32, 40, 64, 96, 130])
    g = case.groups if cin_g * case.groups <= 256 and cout_g * case.groups <= 256 else 1
    case = Case(case.n, cin_g * g, cout_g * g, case.k, hw, case.stride, case.padding,
                case.output_padding, case.dilation, g, case.bias, case.unbatched, noncontiguous=case.noncontiguous)
    if min(case.out_hw()) <= 0:
        pytest.skip("no output")
    if torch.cuda.get_device_capability() == (9, 0) and case.n > 0:
        assert path_taken(case, torch.float32) == "wgh", f"not on the halo kernel: {case}"
    check_cuda(case, precision, seed * 7919 + i)


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(30))
def test_rows_kernel_cuda(seed, precision, i, monkeypatch):
    """Random problems with 1-4 output channels a group and height dilation 1 on the rows kernel (forced: its
    own pick, then each tile and input-channel split in turn): row strips cut by the image edge, 1-5 height taps a
    phase, pure-fill phases, groups, width dilation, padding past the kernel, channels fewer than the split
    warps, non-contiguous input."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", ["rows", *ROWS_ALGOS, "rows8k2"][i % 7])
    rng = random.Random(seed * 104729 + i)
    case = random_case(rng, max_hw=6, max_ch=3)
    sh = rng.randint(1, 4)
    kh = rng.randint(1, 5 * sh)
    cout_g = rng.randint(1, 4)
    g = rng.choice([1, 1, 2, 3])
    cin_g = rng.choice([1, 3, 8, 37])
    hw = (rng.randint(1, 29), rng.randint(1, 70))
    case = Case(case.n, cin_g * g, cout_g * g, (kh, case.k[1]), hw, (sh, case.stride[1]),
                (rng.randint(0, kh), case.padding[1]), (rng.randint(0, sh - 1), case.output_padding[1]),
                (1, case.dilation[1]), g, case.bias, case.unbatched, noncontiguous=case.noncontiguous)
    if min(case.out_hw()) <= 0:
        pytest.skip("no output")
    if case.n > 0:
        assert path_taken(case, TORCH_DTYPE[precision]) == "rows", f"not on the rows kernel: {case}"
    check_cuda(case, precision, seed * 104729 + i)


def tap_reach(k: int, s: int, p: int, d: int, phases: int) -> int:
    """Input rows (or columns) between the least and greatest offset any phase's taps read."""
    offs = [(r + p - kk * d) // s for r in range(phases) for kk in range(k) if (r + p - kk * d) % s == 0]
    return max(offs) - min(offs) if offs else 0


def patch_fits(case: Case) -> bool:
    """The patch kernel's limits (convt_patch.cu patch_supports): 1-4 output channels a group, height dilation 1,
    at most 5 height taps a phase and 16 phases, taps reaching at most 16 rows and 8 columns."""
    (oh, ow), (kh, kw), (sh, sw) = case.out_hw(), case.k, case.stride
    ph, pw = min(sh, oh), min(sw, ow)
    return (case.cout // case.groups <= 4 and case.dilation[0] == 1 and -(-kh // sh) <= 5 and ph * pw <= 16
            and tap_reach(kh, sh, case.padding[0], 1, ph) <= 16
            and tap_reach(kw, sw, case.padding[1], case.dilation[1], pw) <= 8)


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(32))
def test_patch_kernel_cuda(seed, precision, i, monkeypatch):
    """Random problems the patch kernel takes, forced onto it (its own split, then 1, 2 and 4 warps a split):
    1-16 phases, 1-5 height taps a phase, pure-fill phases, width dilation, padding past the kernel, patches cut
    by the image edge, several channel chunks and a tail, channels fewer than the split warps, groups,
    non-contiguous input."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", PATCH_ALGOS[i % 4])
    rng = random.Random(seed * 7727 + i)
    while True:
        base = random_case(rng, max_hw=6, max_ch=3)
        sh, sw = rng.randint(1, 4), rng.randint(1, 4)
        kh, kw = rng.randint(1, 5 * sh), rng.randint(1, 9)
        dw = rng.randint(1, 3)
        g = rng.choice([1, 1, 2, 3])
        cin_g, cout_g = rng.choice([1, 2, 5, 9, 37, 70]), rng.randint(1, 4)  # 70: five chunks, three buffers reused
        case = Case(base.n, cin_g * g, cout_g * g, (kh, kw), (rng.randint(1, 29), rng.randint(1, 70)), (sh, sw),
                    (rng.randint(0, kh), rng.randint(0, dw * kw)), (rng.randint(0, sh - 1), rng.randrange(max(sw, dw))),
                    (1, dw), g, base.bias, base.unbatched, noncontiguous=base.noncontiguous)
        if min(case.out_hw()) > 0 and patch_fits(case):
            break
    if case.n > 0:
        assert path_taken(case, TORCH_DTYPE[precision]) == "patch", f"not on the patch kernel: {case}"
    check_cuda(case, precision, seed * 7727 + i, out_offset=rng.choice([0, 1]))


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("layer", ["fsrcnn-56-1-n1", "dcgan-64-3-n64", "depthwise-256-n16"])
def test_patch_kernel_decoder_layers_cuda(seed, precision, layer, monkeypatch):
    """The decoder layers with 1-4 output channels a group, full size, on the path the heuristic picks for them: the
    patch kernel (thousands of blocks, 4 and 9 phases, one and several channel chunks) in strict fp32 and double and
    for the depthwise layer, the taps kernel for FSRCNN and DCGAN 64->3 in TF32 and half types, but FSRCNN (three
    input rows an output's taps read) on the stack kernel on an sm_90 device."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", "auto")
    case = Case(*DECODER_LAYERS[layer], True)
    taps = layer != "depthwise-256-n16" and precision in ("float32-tf32", "float16", "bfloat16")
    stack = taps and layer == "fsrcnn-56-1-n1" and torch.cuda.get_device_capability() == (9, 0)
    want = "stack" if stack else "taps" if taps else "patch"
    assert path_taken(case, TORCH_DTYPE[precision]) == want, layer
    check_cuda(case, precision, seed, ref_device="cuda")


@pytest.mark.parametrize("precision", ["float32-tf32", "float16", "bfloat16"], indirect=True)
@pytest.mark.parametrize("shape", [
    (2, 24, 1, (8, 8), (96, 96), (4, 4), (2, 2), (0, 0), (1, 1), 1),   # 1 x 4 x 2 x 4 x 2 = 64 products a pixel
    (8, 32, 4, (4, 4), (64, 64), (2, 2), (1, 1), (0, 0), (1, 1), 1),   # 4 x 2 x 2 x 2 x 2 = 64
    (2, 128, 4, (6, 6), (48, 48), (2, 2), (2, 2), (0, 0), (1, 1), 2),  # 2 x 2 x 3 x 2 x 3 = 72
])
def test_taps_pick_by_products_cuda(seed, precision, shape, monkeypatch):
    """The heuristic's split of the few-output-channel strided layers: three input rows an output's taps read go to
    the stack kernel on an sm_90 device; else 49-64 products a pixel go to the cells kernel (where a third of the taps
    kernel's six paired m-tiles is padding), more to the taps kernel."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", "auto")
    case = Case(*shape, True)
    k, s = case.k, case.stride
    rows = cells_offsets(k[0], s[0], case.padding[0], 1)
    products = case.cout // case.groups * s[0] * rows * s[1] * cells_offsets(k[1], s[1], case.padding[1], 1)
    if rows == 3 and stack_fits(case, precision) and torch.cuda.get_device_capability() == (9, 0):
        want = "stack"
    else:
        want = "cells" if 48 < products <= 64 else "taps"
    assert path_taken(case, TORCH_DTYPE[precision]) == want, shape
    check_cuda(case, precision, seed, ref_device="cuda")


# The columns kernel takes fp16, bf16 and fp32 (TF32, or 3xTF32 for strict); double falls back to ffma.
# "cols" is the kernel's pick: on sm_90a the shuffle takes its wgmma form (convt_colsw.cu) where that applies; colsk1
# and colsk2 force the mma.sync form's two stage depths.
COLS_ALGOS = ["cols", "colsk1", "colsk2"]
# The gather also takes 1, 2 or 4 output channels a block (fewer than its tile holds leave columns unused).
COLS_GATHER_ALGOS = [*COLS_ALGOS, "colsc1", "colsc2", "colsc4"]


def cols_fits(case: Case, dtype) -> bool:
    """The columns kernel's limits (convt_cols.cu cols_supports): shuffle (kernel == stride without padding) with
    16-byte input planes and weight rows; gather with one output channel's columns in the column tile, 16-byte input
    planes (images of at most one pixel tile) or rows (larger images, tiled), a tiling whose tile holds the halo,
    and tap tables that fit."""
    if dtype == torch.float64:
        return False
    vec = 16 // dtype.itemsize
    hw, kk = case.hw[0] * case.hw[1], case.k[0] * case.k[1]
    if cols_shuffle(case):
        return hw % vec == 0 and case.cout // case.groups * kk % vec == 0
    bm, bn = cols_tile(case)
    if kk > bn:
        return False
    if hw <= bm:
        if hw % vec:
            return False
        own = case.out_hw()
    else:
        tiling = cols_tiling(case, vec)
        if case.hw[1] % vec or tiling is None:
            return False
        own = tiling[-2:]
    return own[0] * (case.k[0] + 1) + own[1] * (case.k[1] + 1) <= 4096


def cols_tile(case: Case) -> tuple[int, int]:
    """Pixels x columns of the columns kernel's block tile (convt_cols.cu warps_m)."""
    hw, kk = case.hw[0] * case.hw[1], case.k[0] * case.k[1]
    tall = not cols_shuffle(case) and hw > 128 and (hw <= 256 or kk <= 64)
    return (256, 64) if tall else (128, 128)


def _tiles_along(n: int, t: int, st: int) -> int:
    return 1 if n <= t else (n - t + st - 1) // st + 1


def _own_start(j: int, tiles: int, st: int, s: int, pad: int, reach: int, out: int) -> int:
    if j <= 0:
        return 0
    if j >= tiles:
        return out
    return min(max((j * st - 1) * s - pad + reach + 1, 0), out)


def cols_tiling(case: Case, vec: int):
    """The tiled gather's tiling as convt_cols.cu's geometry picks it: (tile rows, tile columns, tiles down, tiles
    across, most output rows a tile owns, most output columns), or None where no tile holds the halo."""
    bm = cols_tile(case)[0]
    reach = [(k - 1) * d for k, d in zip(case.k, case.dilation)]
    halo = [r // s for r, s in zip(reach, case.stride)]
    best = None
    tw = vec
    while tw <= bm:
        th = bm // tw
        sth, stw = th - halo[0], (tw - halo[1]) // vec * vec
        if sth >= 1 and stw >= 1:
            nh, nw = _tiles_along(case.hw[0], th, sth), _tiles_along(case.hw[1], tw, stw)
            if best is None or nh * nw < best[0]:
                best = (nh * nw, th, tw, sth, stw, nh, nw)
        tw *= 2
    if best is None:
        return None
    _, th, tw, sth, stw, nh, nw = best
    out = case.out_hw()

    def most(tiles, st, axis):
        if tiles == 1:
            return out[axis]
        args = (st, case.stride[axis], case.padding[axis], reach[axis], out[axis])
        return min(out[axis], max(_own_start(1, tiles, *args), st * case.stride[axis],
                                  out[axis] - _own_start(tiles - 1, tiles, *args)))

    return th, tw, nh, nw, most(nh, sth, 0), most(nw, stw, 1)


def cols_shuffle(case: Case) -> bool:
    return (case.k == case.stride and case.padding == (0, 0) and case.output_padding == (0, 0)
            and case.dilation == (1, 1))


def check_cols(case: Case, precision: str, seed: int, rng: random.Random) -> None:
    if case.n > 0:
        want = "cols" if cols_fits(case, TORCH_DTYPE[precision]) else "ffma"
        assert path_taken(case, TORCH_DTYPE[precision]) == want, f"not on the {want} path: {case}"
    check_cuda(case, precision, seed, out_offset=rng.choice([0, 1]))


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(30))
def test_cols_shuffle_cuda(seed, precision, i, monkeypatch):
    """Random kernel == stride problems forced onto the columns kernel (a pixel shuffle): pixel tiles across images
    and cut by the batch's end, column tiles cut by the edge, 1-4 per axis (asymmetric), channel chunks with a tail
    and fewer channels than a chunk, odd kernel widths (one store an output) and outputs off alignment, groups, bias,
    non-contiguous input; its pick, then 64 and 128 bytes of k a stage."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", COLS_ALGOS[i % 3])
    rng = random.Random(seed * 6151 + i)
    base = random_case(rng, max_hw=6, max_ch=2)
    vec = 16 // TORCH_DTYPE[precision].itemsize  # 16-byte input planes and weight rows
    k = (rng.randint(1, 4), rng.randint(1, 4))
    g = rng.choice([1, 1, 2, 3])
    cin_g = rng.choice([1, 5, 16, 33, 70, 130])
    cout_g = rng.choice([c for c in range(1, 81) if c * k[0] * k[1] % vec == 0])
    hw = rng.choice([(h, w) for h in range(1, 31) for w in range(1, 41) if h * w % vec == 0])
    case = Case(base.n, cin_g * g, cout_g * g, k, hw, k, (0, 0), (0, 0), (1, 1), g, base.bias, base.unbatched,
                noncontiguous=base.noncontiguous)
    check_cols(case, precision, seed * 6151 + i, rng)


# The wgmma shuffle's walk (convt_colsw.cu): blocks a (group, 128-column tile) pair, each walking 256-pixel tiles SMs /
# pairs apart, so these take several tiles a block, a last tile cut by the batch's end, tiles across images, column
# tiles cut by the edge, odd kernel widths (one store an output), channel tails past a chunk (32 TF32, 64 half types),
# groups and bias; with the output offset by an element or not (its second number). Its stores staged as output rows
# (a 2x2 kernel, input widths a multiple of 64, an aligned output) take the last four: U-Net's layer itself, a last
# tile that only its first warpgroup fills beside a column tile cut by the edge (whose stores are the pair stores),
# and groups.
COLSW_WALKS = [
    (Case(2, 40, 24, (2, 2), (130, 136), (2, 2), (0, 0), (0, 0), (1, 1), 1, True), 0),
    (Case(1, 2 * 70, 2 * 20, (2, 2), (192, 200), (2, 2), (0, 0), (0, 0), (1, 1), 2, True), 1),
    (Case(3, 130, 48, (3, 3), (60, 64), (3, 3), (0, 0), (0, 0), (1, 1), 1, False), 0),
    (Case(1, 128, 64, (2, 2), (256, 256), (2, 2), (0, 0), (0, 0), (1, 1), 1, True), 1),
    (Case(1, 128, 64, (2, 2), (256, 256), (2, 2), (0, 0), (0, 0), (1, 1), 1, True), 0),
    (Case(3, 72, 40, (2, 2), (95, 64), (2, 2), (0, 0), (0, 0), (1, 1), 1, True), 0),
    (Case(2, 2 * 48, 2 * 32, (2, 2), (64, 128), (2, 2), (0, 0), (0, 0), (1, 1), 2, False), 0),
    (Case(2, 2 * 200, 2 * 32, (2, 2), (16, 192), (2, 2), (0, 0), (0, 0), (1, 1), 2, True), 0),
]


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(len(COLSW_WALKS)))
def test_colsw_walk_cuda(seed, precision, i, monkeypatch):
    """Shuffle layers past one wave of tiles forced onto the columns kernel's wgmma form (or its pick where that form
    does not apply: strict fp32, float64, more channels than its weights hold)."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", "colsw")
    case, out_offset = COLSW_WALKS[i]
    if case.cin // case.groups > 128 and precision == "float32-tf32":
        pytest.skip("TF32 past 128 channels a group is wgmma's phase path's, not the columns kernel's")
    want = "cols" if cols_fits(case, TORCH_DTYPE[precision]) else "ffma"
    assert path_taken(case, TORCH_DTYPE[precision]) == want, case
    check_cuda(case, precision, seed * 131 + i, out_offset=out_offset, ref_device="cuda")


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(40))
def test_cols_gather_cuda(seed, precision, i, monkeypatch):
    """Random problems on small images (1-256 pixels) forced onto the columns kernel's gather: overlapping taps summed
    in shared memory with the divisibility test, strides 1-4, padding past the kernel, output padding, dilation,
    pure-fill rows and columns, both tiles (128 and 256 pixels), several images and output channels a block and the
    batch or channels ending inside a tile, groups, channel tails, bias, outputs off alignment; its pick (fewer
    channels a block on small grids), 64 and 128 bytes of k a stage, then 1, 2 and 4 output channels a block forced
    (or what the tile holds where a count breaks its 16-byte column copies; on the 256-pixel tile, columns that fit
    one warp column are split by k-steps over both, summed in shared memory)."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", COLS_GATHER_ALGOS[i % 6])
    rng = random.Random(seed * 7057 + i)
    vec = 16 // TORCH_DTYPE[precision].itemsize
    hws = [(h, w) for h in range(1, 17) for w in range(1, 17) if h * w % vec == 0]
    case = random_gather_case(rng, TORCH_DTYPE[precision], k_max=5, cout_max=40, batches=[1, 2, 3, 9],
                              pick_hw=lambda: rng.choice(hws), tiled=False)
    check_cols(case, precision, seed * 7057 + i, rng)


def random_gather_case(rng: random.Random, dtype, *, k_max: int, cout_max: int, batches, pick_hw, tiled: bool) -> Case:
    """A random problem for the columns kernel's gather in this dtype (any, for float64, which it does not take):
    kernels to k_max with strides 1-4, dilation 1-2, padding past the kernel and output padding, groups, channel
    tails, bias; whole images, or (tiled) images past one pixel tile with non-contiguous input at times."""
    for _ in range(1000):
        base = random_case(rng, max_hw=6, max_ch=2)
        k = (rng.randint(1, k_max), rng.randint(1, k_max))
        s = (rng.randint(1, 4), rng.randint(1, 4))
        d = (rng.randint(1, 2), rng.randint(1, 2))
        hw = pick_hw()
        g = rng.choice([1, 1, 2])
        cin_g, cout_g = rng.choice([1, 7, 16, 40, 70]), rng.randint(1, cout_max)
        case = Case(rng.choice(batches), cin_g * g, cout_g * g, k, hw, s,
                    (rng.randint(0, k[0]), rng.randint(0, k[1])),
                    tuple(rng.randrange(max(si, di)) for si, di in zip(s, d)), d, g, base.bias,
                    noncontiguous=tiled and base.noncontiguous)
        if (min(case.out_hw()) > 0 and not cols_shuffle(case) and (hw[0] * hw[1] > cols_tile(case)[0]) == tiled
                and (dtype == torch.float64 or cols_fits(case, dtype))):
            break
    return case


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(40))
def test_cols_tiled_cuda(seed, precision, i, monkeypatch):
    """Random problems on images past one pixel tile forced onto the columns kernel's tiled gather: each tile
    recomputes its halo and writes the outputs whose taps all lie in it, so the partition of outputs between tiles is
    the thing checked: kernels to 9x9 with strides 1-4, dilation, padding past the kernel, output padding, tiles cut
    by the image's edges, 1-6 output channels a group (weights copied by element where their rows are off 16 bytes),
    channel tails, groups, batch, bias, non-contiguous input, outputs off alignment; its pick, 128 bytes of k, then
    1 and 2 output channels a block."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", COLS_TILED_ALGOS[i % 4])
    rng = random.Random(seed * 7919 + i)
    vec = 16 // TORCH_DTYPE[precision].itemsize
    case = random_gather_case(rng, TORCH_DTYPE[precision], k_max=9, cout_max=6, batches=[1, 2],
                              pick_hw=lambda: (rng.randint(9, 40), vec * rng.randint(1, 64 // vec)), tiled=True)
    check_cols(case, precision, seed * 7919 + i, rng)


# The tiled gather: its pick, 128 bytes of k a stage, one and two output channels a block.
COLS_TILED_ALGOS = ["cols", "colsk2", "colsc1", "colsc2"]


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("layer", ["fsrcnn-56-1-n1", "dcgan-64-3-n64"])
def test_cols_tiled_decoder_layers_cuda(seed, precision, layer, monkeypatch):
    """FSRCNN's 9x9 stride-3 layer (81 columns: weights copied by element) and DCGAN's 64->3 layer, full size,
    forced onto the tiled gather: thousands of tiles, edge tiles that own the image's last rows and columns."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", "cols")
    case = Case(*DECODER_LAYERS[layer], True)
    want = "ffma" if precision == "float64" else "cols"
    assert path_taken(case, TORCH_DTYPE[precision]) == want, layer
    check_cuda(case, precision, seed, ref_device="cuda")


# The cells kernel: its pick, then one and two mma k-steps a chunk.
CELLS_ALGOS = ["cells", "cellsk1", "cellsk2"]


def cells_offsets(k: int, s: int, p: int, d: int) -> int:
    """Input offsets, least to greatest, that any phase's taps read along an axis, at the cells' shift c (cell a
    starts at output s a - c) that makes them fewest (convt_cells.cu axis_offsets)."""
    def span(c: int) -> int:
        offs = [(r - c + p - kk * d) // s for r in range(s) for kk in range(k) if (r - c + p - kk * d) % s == 0]
        return max(offs) - min(offs) + 1
    return min(span(c) for c in range(s))


def cells_fits(case: Case, dtype) -> bool:
    """The cells kernel's limits (convt_cells.cu geometry): fp32/fp16/bf16, a cell's outputs (Cout/g x sh x sw) at
    most 16, input offsets at most 5 along the height, 8 along the width and 16 in all."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = case.k, case.stride, case.padding, case.dilation
    if dtype == torch.float64 or case.cout // case.groups * sh * sw > 16 or max(kh, kw) > 127:
        return False
    if (kh - 1) * dh > sh * 9 or (kw - 1) * dw > sw * 9:
        return False
    uh, uw = cells_offsets(kh, sh, ph, dh), cells_offsets(kw, sw, pw, dw)
    return uh <= 5 and uw <= 8 and uh * uw <= 16


def strided_case(rng, cin_gs, cout_g_max, max_hw, fits) -> Case:
    """A random problem for the few-output-channel strided kernels (cells, taps) that `fits` takes: strides 1-4 a
    axis, dilation 1-2, kernels up to 3 strides, padding past the kernel, every legal output padding, groups of 1 or
    2, cin_gs input channels a group, 1..cout_g_max(stride, kernel) output channels a group, images up to max_hw."""
    for _ in range(1000):
        base = random_case(rng, max_hw=6, max_ch=2)
        s = (rng.randint(1, 4), rng.randint(1, 4))
        d = (rng.randint(1, 2), rng.randint(1, 2))
        k = (rng.randint(1, 3 * s[0]), rng.randint(1, 3 * s[1]))
        g = rng.choice([1, 1, 2])
        cin_g, cout_g = rng.choice(cin_gs), rng.randint(1, max(1, cout_g_max(s, k)))
        case = Case(rng.choice([1, 2]), cin_g * g, cout_g * g, k,
                    (rng.randint(1, max_hw[0]), rng.randint(1, max_hw[1])), s,
                    (rng.randint(0, k[0]), rng.randint(0, k[1])),
                    tuple(rng.randrange(max(si, di)) for si, di in zip(s, d)), d, g, base.bias,
                    noncontiguous=base.noncontiguous)
        if min(case.out_hw()) > 0 and fits(case):
            return case
    raise AssertionError("no random case fits")


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(40))
def test_cells_kernel_cuda(seed, precision, i, monkeypatch):
    """Random strided problems forced onto the cells kernel (a cell's sh x sw outputs x its output channels as GEMM
    columns, input channels x the offsets the taps read as its reduction): strides 1-4 a axis, 1-16 outputs a cell
    (one or two n8 tiles), kernels past and below the stride, padding past the kernel, output padding (cells the
    output cuts), dilation, pure-fill phases, several 8 x 32-cell tiles a image and tiles cut by its edges, channel
    chunks with a tail and fewer channels than a chunk, groups, batch, bias, non-contiguous input, outputs off
    alignment; its pick, then one and two mma k-steps a chunk of input channels. float64, which it does not take,
    checks the fallback."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", CELLS_ALGOS[i % 3])
    rng = random.Random(seed * 8191 + i)
    dtype = TORCH_DTYPE[precision]
    case = strided_case(rng, [1, 5, 8, 17, 40], lambda s, k: 16 // (s[0] * s[1]), (24, 80),
                        lambda c: cells_fits(c, torch.float32))
    want = "cells" if cells_fits(case, dtype) else "ffma"
    assert path_taken(case, dtype) == want, f"not on the {want} path: {case}"
    check_cuda(case, precision, seed * 8191 + i, out_offset=rng.choice([0, 1]))


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("layer", ["fsrcnn-56-1-n1", "dcgan-64-3-n64"])
@pytest.mark.parametrize("algo", ["cellsk1", "cellsk2"])
def test_cells_decoder_layers_cuda(seed, precision, layer, algo, monkeypatch):
    """FSRCNN's 9x9 stride-3 layer (9 outputs a cell, 9 offsets at a shift of one, 257 x 257 cells) and DCGAN's 64->3
    layer (12 outputs a cell, 4 offsets at a shift of one, batch 64), full size, forced onto the cells kernel at one and two k-steps a
    chunk."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", algo)
    case = Case(*DECODER_LAYERS[layer], True)
    assert path_taken(case, TORCH_DTYPE[precision]) == ("ffma" if precision == "float64" else "cells"), layer
    check_cuda(case, precision, seed, ref_device="cuda")


def taps_fits(case: Case, precision: str) -> bool:
    """The taps kernel's limits (convt_taps.cu geometry): fp16, bf16 and fp32 as TF32; input channels a group at most
    64; at the cells' shift, at most 4 input offsets a axis; at most 128 phases (sh x sw); a pixel's products in the
    col2im's order, Cout/g x sh x (height offsets) x sw x (width offsets), at most 96."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = case.k, case.stride, case.padding, case.dilation
    if precision not in ("float32-tf32", "float16", "bfloat16") or max(kh, kw) > 127 or max(sh, sw) > 16:
        return False
    if case.cin // case.groups > 64 or sh * sw > 128:
        return False
    if (kh - 1) * dh > sh * 9 or (kw - 1) * dw > sw * 9:
        return False
    uh, uw = cells_offsets(kh, sh, ph, dh), cells_offsets(kw, sw, pw, dw)
    return uh <= 4 and uw <= 4 and case.cout // case.groups * sh * uh * sw * uw <= 96


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(40))
def test_taps_kernel_cuda(seed, precision, i, monkeypatch):
    """Random problems forced onto the taps kernel (a pixel's products, Cout/g x KH x KW, as GEMM rows into a ring of
    input rows in shared memory, each output summing its taps' products): strides 1-4 a axis, kernels past and below
    the stride, padding past the kernel, output padding, dilation, pure-fill phases, images of one strip and segment
    and of many cut by their edges, segments of fewer rows than an iteration, channels not a multiple of the k-step
    and fewer than one, groups, batch, bias, non-contiguous input, outputs off alignment. Strict fp32 and float64,
    which it does not take, check the fallback."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", "taps")
    rng = random.Random(seed * 7919 + i)
    case = strided_case(rng, [1, 5, 8, 17, 40, 64], lambda s, k: 96 // (max(k[0], s[0]) * max(k[1], s[1])), (30, 60),
                        lambda c: taps_fits(c, "float16"))
    want = "taps" if taps_fits(case, precision) else "ffma"
    assert path_taken(case, TORCH_DTYPE[precision]) == want, f"not on the {want} path: {case}"
    check_cuda(case, precision, seed * 7919 + i, out_offset=rng.choice([0, 1]))


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("layer", ["fsrcnn-56-1-n1", "dcgan-64-3-n64"])
def test_taps_decoder_layers_cuda(seed, precision, layer, monkeypatch):
    """FSRCNN's 9x9 stride-3 layer (81 products a pixel, 3 x 3 offsets at a shift of one, 256 x 256 input) and DCGAN's
    64->3 layer (48 products, 2 x 2 offsets, batch 64), full size, forced onto the taps kernel."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", "taps")
    case = Case(*DECODER_LAYERS[layer], True)
    assert path_taken(case, TORCH_DTYPE[precision]) == ("taps" if taps_fits(case, precision) else "ffma"), layer
    check_cuda(case, precision, seed, ref_device="cuda")


def stack_fits(case: Case, precision: str) -> bool:
    """The stack kernel's limits (convt_stack.cu geometry) on an sm_90a device: fp16, bf16 and fp32 as TF32; input
    channels a group at most 64; at the cells' shift, 2 or 3 input offsets along the height and at most 4 along the
    width; a pixel's products, Cout/g x sh x sw x (width offsets), at most 32."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = case.k, case.stride, case.padding, case.dilation
    if precision not in ("float32-tf32", "float16", "bfloat16"):
        return False
    if max(kh, kw) > 127 or max(sh, sw) > 16 or case.cin // case.groups > 64:
        return False
    if (kh - 1) * dh > sh * 9 or (kw - 1) * dw > sw * 9:
        return False
    uh, uw = cells_offsets(kh, sh, ph, dh), cells_offsets(kw, sw, pw, dw)
    return 2 <= uh <= 3 and uw <= 4 and case.cout // case.groups * sh * sw * uw <= 32


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(40))
def test_stack_kernel_cuda(seed, precision, i, monkeypatch):
    """Random problems forced onto the stack kernel (a cell row's products a pixel as wgmma columns, the height
    offsets' input rows stacked in its reduction, each output summing its width taps' products): strides 1-4 a axis,
    kernels past and below the stride, padding past the kernel, output padding, dilation, pure-fill phases, images of
    one strip and segment and of many cut by their edges, segments shorter than the row-set period, channels not a
    multiple of the k-step and fewer than one, groups, batch, bias, non-contiguous input, outputs off alignment.
    Strict fp32 and float64, which it does not take, check the fallback."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma: sm_90 only")
    monkeypatch.setenv("CONVT_CUDA_ALGO", "stack")
    rng = random.Random(seed * 7901 + i)
    case = strided_case(rng, [1, 5, 8, 17, 40, 64], lambda s, k: 32 // (s[0] * s[1] * max(1, -(-k[1] // s[1]))),
                        (30, 150), lambda c: stack_fits(c, "float16"))
    want = "stack" if stack_fits(case, precision) else "ffma"
    assert path_taken(case, TORCH_DTYPE[precision]) == want, f"not on the {want} path: {case}"
    check_cuda(case, precision, seed * 7901 + i, out_offset=rng.choice([0, 1]))


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("layer", ["fsrcnn-56-1-n1", "dcgan-64-3-n64"])
def test_stack_decoder_layers_cuda(seed, precision, layer, monkeypatch):
    """FSRCNN's 9x9 stride-3 layer (27 products a pixel, 3 height offsets stacked at a shift of one) and DCGAN's 64->3
    layer (24 products, 2 height offsets, batch 64), full size, forced onto the stack kernel."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma: sm_90 only")
    monkeypatch.setenv("CONVT_CUDA_ALGO", "stack")
    case = Case(*DECODER_LAYERS[layer], True)
    assert path_taken(case, TORCH_DTYPE[precision]) == ("stack" if stack_fits(case, precision) else "ffma"), layer
    check_cuda(case, precision, seed, ref_device="cuda")


# The stack kernel's TMA (TF32): a segment's first rows land by TMA at the block's start, the rest through the ring.
# Long segments need many strips a wave (the grid aims at one wave of 2 blocks an SM), so most are batches of narrow
# images (segment lengths below are an H100's or H200's, 132 SMs). The last takes the register path: its rows are off
# 16 bytes.
STACK_RING_CASES = {
    # FSRCNN's layer, 5 cell rows a segment (the ring wraps), 56 channels of 64 (the slots' zero channels), bias
    "fsrcnn-n24-20x72": (Case(24, 56, 1, (9, 9), (20, 72), (3, 3), (4, 4), (2, 2), (1, 1), 1, True), True),
    # two groups of 32 channels (the 5-d map, a warpgroup's short k), segments of 6 cell rows, output padding 1
    "g2-n12-30x100": (Case(12, 64, 2, (9, 9), (30, 100), (3, 3), (4, 4), (1, 1), (1, 1), 2, False), True),
    # a non-contiguous input (the op's contiguous copy), 40 channels of 64, three strips the last cut by the edge
    "fsrcnn-n16-26x136-nc": (Case(16, 40, 1, (9, 9), (26, 136), (3, 3), (4, 4), (2, 2), (1, 1), 1, True,
                                  noncontiguous=True), True),
    # segments of one and of two cell rows: no ring row at all, and one, which a later-dispatched block asks for at
    # its start
    "fsrcnn-n1-8x256": (Case(1, 56, 1, (9, 9), (8, 256), (3, 3), (4, 4), (2, 2), (1, 1), 1, True), True),
    "fsrcnn-n4-24x256": (Case(4, 56, 1, (9, 9), (24, 256), (3, 3), (4, 4), (2, 2), (1, 1), 1, False), True),
    # DCGAN's 64->3 layer at 128 columns: two height offsets (N = 64), segments of 9 cell rows
    "dcgan-n64-16x128": (Case(64, 64, 3, (4, 4), (16, 128), (2, 2), (1, 1), (0, 0), (1, 1), 1, True), True),
    "fsrcnn-n24-20x70": (Case(24, 56, 1, (9, 9), (20, 70), (3, 3), (4, 4), (2, 2), (1, 1), 1, True), False),
}


@pytest.mark.parametrize("precision", ["float32-tf32"], indirect=True)
@pytest.mark.parametrize("name", STACK_RING_CASES)
def test_stack_ring_cuda(seed, precision, name, monkeypatch):
    """TF32 cases forced onto the stack kernel whose segments reach its TMA ring (or, the last, that do not take it)."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma and TMA: sm_90 only")
    monkeypatch.setenv("CONVT_CUDA_ALGO", "stack")
    case, ring = STACK_RING_CASES[name]
    assert path_taken(case, torch.float32) == "stack", name
    x, w, _ = case.tensors(torch.float32, "cuda", torch.Generator().manual_seed(0))
    assert torch.ops.convt.cuda_stack_ring(x, w, *case.args()) == ring, name
    check_cuda(case, precision, seed, ref_device="cuda")


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("layer", ["unet-512-256-n8", "unet-128-64-n1", "dcgan-512-256-n64", "dcgan-128-64-n1"])
def test_cols_decoder_layers_cuda(seed, precision, layer, monkeypatch):
    """The U-Net (shuffle) and DCGAN (gather) layers, full size, on the path the heuristic picks: the columns kernel
    but for U-Net in TF32 past 128 input channels a group, and for double."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", "auto")
    case = Case(*DECODER_LAYERS[layer], True)
    cin_g = case.cin // case.groups
    if cols_shuffle(case):
        on_cols = precision != "float64" and (precision != "float32-tf32" or cin_g <= 128)
    else:
        on_cols = precision != "float64"
    assert (path_taken(case, TORCH_DTYPE[precision]) == "cols") == on_cols, layer
    check_cuda(case, precision, seed, ref_device="cuda")


# The dense kernel (stride 1) takes fp16, bf16 and fp32 (TF32, or 3xTF32 for strict); double falls back to ffma.
DENSE_ALGOS = ["dense", "dense2", "dense2w", "dense4", "dense4w"]


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(40))
def test_dense_kernel_cuda(seed, precision, i, monkeypatch):
    """Random stride-1 problems forced onto the dense kernel, each tile in turn: output rectangles cut by the image's
    edge in both axes, halos reaching past every edge (padding 0 to past the kernel), dilation, output padding,
    asymmetric kernels, input channels with a tail chunk and fewer than a chunk, output channels past one tile and
    not a multiple of it, groups, bias, batch and unbatched, non-contiguous input, outputs off alignment (one store
    an output); widths off 16 bytes must fall back to ffma."""
    algo = DENSE_ALGOS[i % len(DENSE_ALGOS)]
    monkeypatch.setenv("CONVT_CUDA_ALGO", algo)
    rng = random.Random(seed * 92821 + i)
    dtype = TORCH_DTYPE[precision]
    vec = 16 // dtype.itemsize
    base = random_case(rng, max_hw=6, max_ch=2)
    k = (rng.randint(1, 4), rng.randint(1, 4))  # with dilation 2 at most, every tile's stages fit 227 KB
    d = (rng.randint(1, 2), rng.randint(1, 2))
    g = rng.choice([1, 1, 2, 3])
    cin_g = rng.choice([1, 5, 8, 16, 24, 40])
    cout_g = rng.choice([1, 7, 16, 33, 64, 70])
    width = rng.choice([vec, 2 * vec, 5 * vec, 9 * vec, 13]) if i % 8 else rng.randint(1, 40)
    case = stride1_case(rng, base, k, d, g, cin_g, cout_g, width, max_h=40)
    if min(case.out_hw()) <= 0:
        pytest.skip("no output")
    fits = torch.cuda.get_device_properties(0).shared_memory_per_block_optin >= 227 * 1024
    want = "dense" if dtype != torch.float64 and width % vec == 0 else "ffma"
    if want == "dense" and not fits:
        pytest.skip("sized for 227 KB of shared memory a block (H100, H200)")
    assert path_taken(case, dtype) == want, f"not on the {want} path: {case}"
    check_cuda(case, precision, seed * 92821 + i, out_offset=rng.choice([0, 1]))


# The wgmma dense kernel (Hopper, stride 1): fp16, bf16 and fp32 as TF32; strict fp32 falls back to the dense kernel,
# double to ffma.
# rows a (consumer) warpgroup, its warpgroups, columns; dws*: warp-specialized and persistent (v18); dwp*: v18
# ping-pong, a tile one warpgroup's rows; dws3/dwp3/dws4w/dwp4w: 88 columns (wgmma's N), widths off a multiple of 8
# pixels (4 rows: 176 accumulators a thread, registers moved from the producer with setmaxnreg);
# dwr*: ping-pong with the weights as wgmma's A from registers; dwn*: v18 with channels as N, 32 a tile (v24)
DWG_TILES = {"dwg": (2, 2, 128), "dwg1": (1, 2, 128), "dwg2": (2, 2, 128), "dwg2s": (2, 2, 64), "dwg4": (4, 2, 64),
             "dwg23": (2, 3, 128), "dwg14": (1, 4, 128), "dwg24": (2, 4, 64),
             "dws": (2, 2, 128), "dws4": (4, 2, 64), "dws23": (2, 3, 64), "dws13": (1, 3, 128), "dwp4": (4, 2, 64),
             "dws3": (3, 2, 88), "dwp3": (3, 2, 88), "dws4w": (4, 2, 88), "dwp4w": (4, 2, 88), "dwr4": (4, 2, 64),
             "dwn8": (8, 2, 64), "dwnp8": (8, 2, 64)}
DWS_ALGOS = [a for a in DWG_TILES if a.startswith(("dws", "dwp", "dwr", "dwn"))]
DWG_ALGOS = list(DWG_TILES)


def dwg_smem_bytes(algo, itemsize, k, d):
    """The wgmma dense kernel's smallest shared memory (convt_dwg.cu's geometry): the mbarriers, two pixel-major
    halos, two chunks of weights, two raw stages and (v17) the copy table."""
    rows, groups, cols = DWG_TILES[algo]
    up = lambda a, b: -(-a // b) * b  # noqa: E731
    vec = 16 // itemsize
    hr = rows * (1 if algo.startswith(("dwp", "dwr", "dwnp")) else groups) + (k[0] - 1) * d[0]
    rp = up(vec - 1 + cols + (k[1] - 1) * d[1], vec)
    plane = up(hr * rp, 32)
    raw = 8 * (plane + (8 if itemsize == 2 else 0))
    tap_words = 256 if algo.startswith("dwn") else 512  # 8 words an output channel of the tile (32 or 64)
    if algo in DWS_ALGOS:  # v18: 64 bytes of mbarriers, no copy table; v28: 64 bytes of ticket slots
        return 4 * (32 + 16 * plane + 2 * k[0] * k[1] * tap_words + 2 * raw)
    return 4 * (8 + 16 * plane + 2 * k[0] * k[1] * 512 + up(hr * rp // vec, 4) + 2 * raw)


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(105))
def test_dwg_kernel_cuda(seed, precision, i, monkeypatch):
    """Random stride-1 problems forced onto the wgmma dense kernel, each tile in turn: kernels up to 4 x 7 with
    dilation 1 and 2 (each tap a descriptor offset into the pixel-major halo), halos past every edge, output
    padding, several chunks (the transpose of the next chunk sliced between taps) and fewer channels than a chunk,
    output channels past one 64-wide tile and not a multiple of it, rows wider than one column tile, groups, bias,
    batch and unbatched, non-contiguous input, outputs off alignment; widths off 16 bytes fall back (dense needs
    them too, so ffma)."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma: sm_90 only")
    algo = DWG_ALGOS[i % len(DWG_ALGOS)]
    monkeypatch.setenv("CONVT_CUDA_ALGO", algo)
    rng = random.Random(seed * 73303 + i)
    dtype = TORCH_DTYPE[precision]
    vec = 16 // dtype.itemsize
    base = random_case(rng, max_hw=6, max_ch=2)
    k = (rng.randint(1, 4), rng.randint(1, 7))
    d = (rng.randint(1, 2), rng.randint(1, 2))
    g = rng.choice([1, 1, 2])
    cin_g = rng.choice([1, 5, 8, 16, 24, 40])
    cout_g = rng.choice([1, 7, 16, 64, 70, 130])
    width = rng.choice([vec, 2 * vec, 5 * vec, 9 * vec, 13, 20 * vec]) if i % 8 else rng.randint(1, 40)
    case = stride1_case(rng, base, k, d, g, cin_g, cout_g, width, max_h=40)
    if min(case.out_hw()) <= 0:
        pytest.skip("no output")
    if torch.cuda.get_device_properties(0).shared_memory_per_block_optin < 227 * 1024:
        pytest.skip("sized for 227 KB of shared memory a block (H100, H200)")
    aligned = width % vec == 0
    limit = torch.cuda.get_device_properties(0).shared_memory_per_block_optin
    if precision == "float64" or not aligned:
        want = "ffma"
    elif precision == "float32":
        want = "dense" if k[1] <= 4 else None  # dense's own test: its stages fit up to 4 x 4 taps
    else:
        want = "dwg" if dwg_smem_bytes(algo, dtype.itemsize, k, d) <= limit else "not dwg"
    taken = path_taken(case, dtype)
    if want == "not dwg":
        assert taken != "dwg", f"a tile over {limit} bytes of shared memory ran: {case}"
    elif want is not None:
        assert taken == want, f"not on the {want} path: {case}"
    check_cuda(case, precision, seed * 73303 + i, out_offset=rng.choice([0, 1]))


@pytest.mark.parametrize("precision", ["float32-tf32", "float16", "bfloat16"], indirect=True)
@pytest.mark.parametrize("algo", DWS_ALGOS)
@pytest.mark.parametrize("cin", [40, 8])
def test_dws_persistent_cuda(seed, precision, algo, cin, monkeypatch):
    """The warp-specialized tiles on problems of more tiles than SMs, so that each block draws several (v28's
    tickets) and its producer stages the next tile's chunks while the consumers finish one: output channels past one
    tile with a tail (three 32-channel tiles with channels as N), a chunk tail, dilation, padding, bias, outputs off
    alignment; with 8 input channels a tile is one chunk, so the producer draws a ticket every chunk."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma: sm_90 only")
    if torch.cuda.get_device_properties(0).shared_memory_per_block_optin < 227 * 1024:
        pytest.skip("sized for 227 KB of shared memory a block (H100, H200)")
    monkeypatch.setenv("CONVT_CUDA_ALGO", algo)
    rng = random.Random(seed * 7919 + DWG_ALGOS.index(algo))
    case = Case(3, cin, 70, (3, 5), (rng.randint(60, 80), 8 * rng.randint(30, 40)), (1, 1), (1, 2), (0, 0), (1, 2), 1,
                True, False)
    assert path_taken(case, TORCH_DTYPE[precision]) == "dwg", f"not on the dwg path: {case}"
    check_cuda(case, precision, seed * 7919 + 1, out_offset=rng.choice([0, 1]), ref_device="cuda")


# The window kernel (v27, Hopper, stride 1, 3 kernel rows at height dilation 1, at most 32 output channels a group).


def dwin_smem_bytes(itemsize, cin_g, groups, kw, dw):
    """The window kernel's smallest shared memory (convt_dwin.cu's geometry): the mbarriers, every group's weights
    (3 kernel rows x 32 channels x 8 k-words a chunk and kernel column) and two raw and two pixel-major halo rows for
    each of its two consumer warpgroups."""
    up = lambda a, b: -(-a // b) * b  # noqa: E731
    vec, ch = 16 // itemsize, (16 if itemsize == 2 else 8)
    chunks = -(-cin_g // ch)
    rp = up(vec - 1 + 64 + (kw - 1) * dw, vec)
    plane = up(rp, 32 if itemsize == 2 else 8)
    raw = up(chunks * ch * (plane + 8 if itemsize == 2 else rp) * itemsize, 128)
    return 256 + groups * chunks * kw * 32 * 96 + 2 * 2 * (raw + chunks * 32 * plane)


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(40))
def test_dwin_kernel_cuda(seed, precision, i, monkeypatch):
    """Random stride-1 problems with 3 kernel rows forced onto the window kernel: kernel
    widths 1-7 with width dilation 1 and 2, halos past every edge (padding up to the kernel's extent), output padding,
    one chunk or several and fewer channels than a chunk, 1-32 output channels a group (a slot padded with zeros),
    groups, bias, batch and unbatched, non-contiguous input, outputs off alignment, images of one band or many and
    one strip or several; fp32's raw rows by TMA with the direct epilogue (even i) and by cp.async with paired stores
    (odd i); a partial last strip's columns by the edge kernel, the full strips alone (i % 3 == 0), kept with the
    others (i % 3 == 1) or as the cost model says (i % 3 == 2); height dilation, widths off 16 bytes and strict fp32
    fall back (so do weights past shared memory)."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma: sm_90 only")
    if torch.cuda.get_device_properties(0).shared_memory_per_block_optin < 227 * 1024:
        pytest.skip("sized for 227 KB of shared memory a block (H100, H200)")
    monkeypatch.setenv("CONVT_CUDA_ALGO", "dwin")
    # fp32's raw rows by TMA with the direct epilogue (even i), or by cp.async with paired stores (odd i)
    monkeypatch.setenv("CONVT_DWIN_TMA", "0" if i % 2 else "1")
    if i % 3 < 2:
        monkeypatch.setenv("CONVT_DWIN_SPLIT", "1" if i % 3 == 0 else "0")
    else:
        monkeypatch.delenv("CONVT_DWIN_SPLIT", raising=False)
    rng = random.Random(seed * 52361 + i)
    dtype = TORCH_DTYPE[precision]
    vec = 16 // dtype.itemsize
    base = random_case(rng, max_hw=6, max_ch=2)
    k = (3, rng.randint(1, 7))
    d = (1 if i % 12 else 2, rng.randint(1, 2))
    g = rng.choice([1, 1, 2])
    cin_g = rng.choice([1, 5, 8, 16, 24, 40])
    cout_g = rng.choice([1, 7, 16, 30, 32])
    width = rng.choice([vec, 2 * vec, 9 * vec, 20 * vec, 33 * vec]) if i % 10 else rng.randint(1, 40)
    case = stride1_case(rng, base, k, d, g, cin_g, cout_g, width, max_h=90)
    if min(case.out_hw()) <= 0:
        pytest.skip("no output")
    limit = torch.cuda.get_device_properties(0).shared_memory_per_block_optin
    fits = dwin_smem_bytes(dtype.itemsize, cin_g, g, k[1], d[1]) <= limit
    taken = path_taken(case, dtype)
    if precision in ("float64", "float32") or width % vec or d[0] != 1:
        assert taken != "dwin", f"the window kernel took a problem it cannot: {case}"
    elif fits:
        assert taken == "dwin", f"not on the window kernel: {case}"
    else:
        assert taken != "dwin", f"a window kernel over {limit} bytes of shared memory ran: {case}"
    check_cuda(case, precision, seed * 52361 + i, out_offset=rng.choice([0, 1]))


@pytest.mark.parametrize("precision", ["float32-tf32", "float16", "bfloat16"], indirect=True)
@pytest.mark.parametrize("split", ["0", "1"])
def test_dwin_persistent_cuda(seed, precision, split, monkeypatch):
    """The window kernel on problems of many more tiles than consumer warpgroups, so that each walks several bands
    and strips (its producer streaming the next tile's rows while the consumer stores this one's last): a band cut at
    the bottom, a strip cut at the edge (with split 1 on the edge kernel, the full strips in their own bands), two
    chunks with a tail, width dilation, padding, bias, outputs off alignment."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma: sm_90 only")
    if torch.cuda.get_device_properties(0).shared_memory_per_block_optin < 227 * 1024:
        pytest.skip("sized for 227 KB of shared memory a block (H100, H200)")
    monkeypatch.setenv("CONVT_CUDA_ALGO", "dwin")
    monkeypatch.setenv("CONVT_DWIN_SPLIT", split)
    rng = random.Random(seed * 7907)
    case = Case(3, 40, 30, (3, 5), (rng.randint(150, 250), 8 * rng.randint(30, 40)), (1, 1), (1, 2), (0, 0), (1, 2),
                1, True, False)
    assert path_taken(case, TORCH_DTYPE[precision]) == "dwin", f"not on the window kernel: {case}"
    check_cuda(case, precision, seed * 7907 + 1, out_offset=rng.choice([0, 1]), ref_device="cuda")


@pytest.mark.parametrize("precision", ["float32-tf32", "float16"], indirect=True)
def test_dwin_edge_beside_cuda(seed, precision, monkeypatch):
    """The edge kernel on its second stream beside the window kernel (the default where the last strip is split off):
    the same bits as both on the caller's stream, from a caller's own stream, and captured in a CUDA graph and replayed
    on a new input (also from a host thread whose first call is the captured one), against the float64 reference."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma: sm_90 only")
    if torch.cuda.get_device_properties(0).shared_memory_per_block_optin < 227 * 1024:
        pytest.skip("sized for 227 KB of shared memory a block (H100, H200)")
    monkeypatch.setenv("CONVT_CUDA_ALGO", "dwin")
    monkeypatch.setenv("CONVT_DWIN_SPLIT", "1")
    # kb71's layer, narrower and shorter: 3 full strips and a 2-column edge.
    case = Case(2, 32, 32, (3, 3), (40, 192), (1, 1), (0, 0), (0, 0), (1, 1), 1, True, False)
    dtype = TORCH_DTYPE[precision]
    assert path_taken(case, dtype) == "dwin", f"not on the window kernel: {case}"
    gen = torch.Generator().manual_seed(seed)
    x, w, b = case.tensors(dtype, "cuda", gen)

    def run(x_):
        out = poisoned_out(case, dtype, "cuda")
        conv_transpose2d_out(x_, w, b, *case.args(), out=out)
        return out

    def checked(out, x_):
        torch.cuda.synchronize()
        assert not torch.isnan(out).any(), f"unwritten output elements: {precision} {case}"
        err = rel_error(out, reference(x_, w, b, case, "cuda"))
        assert err <= TOL[precision], f"rel error {err:.3e}: {precision} {case}"
        return out

    monkeypatch.setenv("CONVT_DWIN_BESIDE", "0")
    same_stream = checked(run(x), x)
    monkeypatch.setenv("CONVT_DWIN_BESIDE", "1")
    assert torch.equal(checked(run(x), x), same_stream)
    user = torch.cuda.Stream()
    user.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(user):
        on_user = run(x)
    torch.cuda.current_stream().wait_stream(user)
    assert torch.equal(checked(on_user, x), same_stream)
    # Captured on a side stream of its own, as torch.cuda.graph does; replayed on a new input.
    static_x = x.clone()
    run(static_x)  # warm-up outside the capture: the kernels' one-time attributes
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = run(static_x)
    x2, _, _ = case.tensors(dtype, "cuda", torch.Generator().manual_seed(seed + 1))
    static_x.copy_(x2)
    static_out.fill_(float("nan"))
    graph.replay()
    checked(static_out, x2)
    monkeypatch.setenv("CONVT_DWIN_BESIDE", "0")
    assert torch.equal(static_out, checked(run(x2), x2))
    # A host thread whose first call is inside a capture makes its side stream and events there.
    monkeypatch.setenv("CONVT_DWIN_BESIDE", "1")
    fresh, errors, fresh_out = torch.cuda.CUDAGraph(), [], {}

    def capture_fresh():
        try:
            with torch.cuda.graph(fresh):
                fresh_out["y"] = run(static_x)
        except Exception as e:  # noqa: BLE001 -- asserted on in the test's thread
            errors.append(e)

    worker = threading.Thread(target=capture_fresh)
    worker.start()
    worker.join()
    assert not errors, errors
    fresh.replay()
    assert torch.equal(checked(fresh_out["y"], x2), static_out)


def dram_bytes_per_sm_cycle() -> float:
    """The heuristic's DRAM rate (smem_attr.h), from the same device facts."""
    p = torch.cuda.get_device_properties(0)
    return 2 * p.memory_clock_rate * p.memory_bus_width / 8 / (p.multi_processor_count * p.clock_rate)


@pytest.mark.parametrize("precision", ["float32-tf32", "float16"], indirect=True)
@pytest.mark.parametrize("shape", [
    (2, 32, 32, (3, 3), (64, 256), (1, 1), (0, 0), (0, 0), (1, 1), 1),   # kb71's layer, smaller
    (1, 48, 64, (3, 2), (40, 96), (1, 1), (1, 0), (0, 0), (1, 1), 2),    # 32 channels a group, 6 taps
])
def test_dwin_pick_under_15_taps_cuda(seed, precision, shape, monkeypatch):
    """At 32 output channels a group or fewer with 3 kernel rows the half types take the window kernel; TF32 under 15
    taps takes it only on a card of 16 or more DRAM bytes an SM cycle (an H200, not an H100), where its pace, which
    follows the DRAM rate, beats dwnp8's, bound on chip."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma: sm_90 only")
    monkeypatch.setenv("CONVT_CUDA_ALGO", "auto")
    case = Case(*shape, True)
    rich = dram_bytes_per_sm_cycle() >= 16
    want = "dwin" if precision != "float32-tf32" or rich else "dwg"
    assert path_taken(case, TORCH_DTYPE[precision]) == want, f"{shape} at {dram_bytes_per_sm_cycle():.1f} B a cycle"
    check_cuda(case, precision, seed, ref_device="cuda")


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("i", range(30))
def test_strip_kernel_cuda(seed, precision, i, monkeypatch):
    """Random problems forced onto the strip kernel, each channel tile in turn and on tensor cores and FFMA: rows
    wider than one staged segment, several row tiles, odd widths and an output at an odd offset in its buffer (rows
    off 16-byte boundaries), pure-fill rows and columns, strides up to 6, dilation, padding past the kernel, groups,
    channel tails, input channels padded to the tensor cores' 8 (1, 3, 7) or not (8), bias, non-contiguous input."""
    algo = STRIP_ALGOS[i % len(STRIP_ALGOS)]
    monkeypatch.setenv("CONVT_CUDA_ALGO", algo)
    rng = random.Random(seed * 15485863 + i)
    base = random_case(rng, max_hw=6, max_ch=2)
    k = (rng.randint(1, 5), rng.randint(1, 7))
    s = (rng.randint(1, 4), rng.randint(1, 6))
    d = (rng.randint(1, 3), rng.randint(1, 3))
    g = rng.choice([1, 2, 3])
    # 8 input channels a group but in float64, whose 8-byte weights of 8 channels x 35 taps x 32 outputs pass the
    # kernel's 64 KB (the case would leave the strip kernel)
    cin_g = rng.choice([1, 3, 7, 8] if precision != "float64" else [1, 3, 7])
    cout_g = rng.choice([1, 5, 16, 33])
    case = Case(min(base.n, 2), cin_g * g, cout_g * g, k, (rng.randint(1, 20), rng.randint(1, 330)), s,
                (rng.randint(0, d[0] * k[0]), rng.randint(0, d[1] * k[1])),
                tuple(rng.randrange(max(si, di)) for si, di in zip(s, d)), d, g, base.bias, base.unbatched,
                noncontiguous=base.noncontiguous)
    if case.unbatched:
        case.n = 1
    if min(case.out_hw()) <= 0:
        pytest.skip("no output")
    if case.n > 0:
        assert path_taken(case, TORCH_DTYPE[precision]) == strip_path(algo, precision), f"not on {algo}: {case}"
    check_cuda(case, precision, seed * 15485863 + i, out_offset=rng.choice([0, 1, 3]))


@pytest.mark.parametrize("precision", DTYPES, indirect=True)
@pytest.mark.parametrize("algo", STRIP_ALGOS)
def test_strip_persistent_cuda(seed, precision, algo, monkeypatch):
    """The strip kernel's persistent blocks on problems of many more rows than the grid holds, so that a block's
    share of rows crosses images, groups and channel tiles (restaging the weights and bias mid-walk) and mixes
    pure-fill rows with tapped ones: groups, channel tails, input channels padded to 8 or not, bias, outputs off
    alignment."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", algo)
    rng = random.Random(seed * 104729 + STRIP_ALGOS.index(algo))
    g = rng.choice([2, 3])
    case = Case(rng.randint(5, 9), rng.choice([5, 8]) * g, rng.choice([37, 70]) * g, (3, 3), (rng.randint(8, 14), rng.randint(20, 90)),
                (rng.randint(2, 3), rng.randint(2, 5)), (1, 1), (0, 1), (2, 1), g, True, False)
    assert path_taken(case, TORCH_DTYPE[precision]) == strip_path(algo, precision), f"not on {algo}: {case}"
    check_cuda(case, precision, seed * 104729 + 1, out_offset=rng.choice([0, 1, 3]), ref_device="cuda")


@pytest.mark.parametrize("precision", ["float32", "float32-tf32"], indirect=True)
@pytest.mark.parametrize("algo", ["auto", "ffma", "strip", "dense", "dense4w", "dwg", "dwg4", "dwg23", "dwg24", "dws",
                                  "dws4", "dws23", "dws13", "dwp4", "dws3", "dwp3", "dws4w", "dwp4w", "dwr4", "dwn8",
                                  "dwnp8", "dwin", "tc32", "tc64", "tc128", "wg", "wg64", "wg128t", "wgh",
                                  "wgh64s"])
@pytest.mark.parametrize("pid", sorted(PROBLEMS))
def test_kernelbench_problem(pid, seed, precision, algo, monkeypatch):
    """Each problem at its current size, fresh random inputs, against float64, on every path."""
    monkeypatch.setenv("CONVT_CUDA_ALGO", algo)
    if algo.startswith("wg") and precision == "float32":
        pytest.skip("wgmma runs fp32 only as TF32")
    n, cin, cout, k, hw, s, p, op, d, g = PROBLEMS[pid]
    gen = torch.Generator(device="cuda").manual_seed(seed + pid)
    w = torch.randn(cin, cout // g, *k, device="cuda", generator=gen)
    worst = 0.0
    for _ in range(2):
        x = torch.rand(n, cin, *hw, device="cuda", generator=gen)  # KernelBench draws torch.rand
        if wgmma_expected(precision):
            # every problem's width is TMA-aligned; the halo kernel takes 32 channels a group or more
            want = "wgh" if algo.startswith("wgh") and cin // g >= 32 else "wg"
            assert torch.ops.convt.cuda_path(x, w, s, p, op, g, d) == want, f"problem {pid} {algo}: fell back"
        if (algo.startswith("dw") and precision == "float32-tf32" and s == (1, 1)
                and torch.cuda.get_device_capability() == (9, 0)):
            # the window kernel takes 3 kernel rows at 32 output channels or fewer (kb71, kb78); dwg the rest
            want = "dwin" if algo == "dwin" and k[0] == 3 and cout // g <= 32 else "dwg"
            assert torch.ops.convt.cuda_path(x, w, s, p, op, g, d) == want, f"problem {pid} {algo}: fell back"
        out = torch.full((n, cout, *kernels.ops.output_size(hw, k, s, p, op, d)), float("nan"), device="cuda")
        conv_transpose2d_out(x, w, None, s, p, op, g, d, out=out)
        ref = F.conv_transpose2d(x.double(), w.double(), None, s, p, op, g, d)
        assert not torch.isnan(out).any(), f"problem {pid}: unwritten outputs"
        err = rel_error(out, ref)
        worst = max(worst, err)
        del out, ref, x
    assert worst <= TOL[precision], f"problem {pid} {precision} {algo}: rel error {worst:.3e} (CONVT_TEST_SEED={seed})"
    print(f"kernelbench {pid} {precision} {algo}: worst rel error {worst:.2e}")


def test_tf32_switch_is_honoured_and_parity_report_on_cuda():
    m = torch.nn.ConvTranspose2d(16, 8, 4, 2, 1).cuda()
    kernels.swap_conv_transpose2d(m)
    x = torch.randn(2, 16, 9, 9, device="cuda")
    old = torch.backends.cudnn.allow_tf32
    try:
        for allow in (True, False):
            torch.backends.cudnn.allow_tf32 = allow
            rep = kernels.check_parity(m, x)
            assert rep["passed"], rep
            assert rep["precision"] == ("float32-tf32" if allow else "float32")
    finally:
        torch.backends.cudnn.allow_tf32 = old


@pytest.mark.parametrize("algo", ["ffma", "tc64", "wg64"])
def test_current_stream_and_no_host_sync(algo, monkeypatch):
    monkeypatch.setenv("CONVT_CUDA_ALGO", algo)
    x = torch.randn(4, 8, 30, 30, device="cuda")
    w = torch.randn(8, 4, 3, 3, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda.set_sync_debug_mode("error")  # any synchronizing call in the op raises
        try:
            out = kernels.conv_transpose2d(x, w, None, 2, 1, 1)
        finally:
            torch.cuda.set_sync_debug_mode(0)
    s.synchronize()
    tol = 1e-5 if algo == "ffma" or not torch.backends.cudnn.allow_tf32 else 2e-3
    torch.testing.assert_close(out, F.conv_transpose2d(x.double(), w.double(), None, 2, 1, 1).float(), rtol=tol, atol=tol * 10)


def test_second_device_guard():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    x = torch.randn(1, 4, 5, 5, device="cuda:1")
    w = torch.randn(4, 2, 3, 3, device="cuda:1")
    torch.testing.assert_close(kernels.conv_transpose2d(x, w), F.conv_transpose2d(x, w), rtol=1e-4, atol=1e-4)


def test_compile_fullgraph_cuda():
    m = torch.nn.Sequential(torch.nn.ConvTranspose2d(8, 4, 3, 2, 1, 1), torch.nn.ReLU()).cuda()
    kernels.swap_conv_transpose2d(m)
    x = torch.randn(2, 8, 7, 7, device="cuda")
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(m, fullgraph=True)(x), m(x))


SANITIZER_SCRIPT = Path(__file__).with_name("sanitize_cases.py")


@pytest.mark.parametrize("tool", ["memcheck", "racecheck"])
def test_compute_sanitizer(tool):
    exe = shutil.which("compute-sanitizer") or next(
        (str(p) for p in Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")).glob("**/compute-sanitizer") if p.is_file()), None)
    if exe is None:
        pytest.skip("compute-sanitizer not found")
    r = subprocess.run([exe, f"--tool={tool}", "--error-exitcode=99", sys.executable, str(SANITIZER_SCRIPT)],
                       capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[2])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert re.search(r"ERROR SUMMARY: 0 errors|0 hazards displayed \(0 errors", r.stdout + r.stderr), r.stdout[-2000:]
