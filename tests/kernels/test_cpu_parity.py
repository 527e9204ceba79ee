"""Randomized parity of the CPU kernel against PyTorch in float64."""

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import kernels
from kernels.ops import conv_transpose2d_out

from .cases import Case, poisoned_out, random_case, reference, rel_error

TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 1e-2}

# The CPU GEMM's task shapes: phase rows over 256 wide (column chunks), one image of 168 pixels with
# 300 channels (two panels of channels), grouped 80-channel panels, 16 images a task with a partial
# last task, and one task split across output channels.
GEMM_SHAPES = [
    Case(2, 3, 5, (3, 3), (3, 300), (1, 1), (1, 1), (0, 0), (1, 1), 1, True),
    Case(2, 300, 7, (3, 3), (12, 14), (2, 2), (1, 1), (1, 1), (1, 1), 1, True),
    Case(3, 160, 10, (4, 4), (5, 5), (2, 2), (1, 1), (0, 0), (1, 1), 2, True),
    Case(40, 3, 4, (4, 4), (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), 1, True),
    Case(1, 8, 30, (3, 3), (6, 6), (1, 1), (1, 1), (0, 0), (1, 1), 1, True),
]


def check(case: Case, dtype, device, seed, tol):
    gen = torch.Generator().manual_seed(seed)
    x, w, b = case.tensors(dtype, device, gen)
    ref = reference(x, w, b, case)
    out = kernels.conv_transpose2d(x, w, b, *case.args())
    ctx = f"CONVT_TEST_SEED={seed} {dtype} {case}"
    assert out.shape == ref.shape, ctx
    assert out.dtype == dtype and out.device.type == torch.device(device).type, ctx
    err = rel_error(out, ref)
    assert err <= tol, f"rel error {err:.3e} > {tol:.0e}: {ctx}"
    poisoned = poisoned_out(case, dtype, device)
    conv_transpose2d_out(x, w, b, *case.args(), out=poisoned)
    assert not torch.isnan(poisoned).any(), f"unwritten output elements: {ctx}"
    assert torch.equal(poisoned, out), f"out= variant differs from functional: {ctx}"
    return err


@pytest.mark.parametrize("i", range(250))
def test_random_configs_cpu(seed, i):
    rng = random.Random(seed * 1000 + i)
    case = random_case(rng)
    for dtype in (torch.float64, torch.float32):
        check(case, dtype, "cpu", seed * 1000 + i, TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reduced_precision_cpu(seed, dtype):
    rng = random.Random(seed)
    for j in range(20):
        check(random_case(rng), dtype, "cpu", seed + j, TOL[dtype])


@pytest.mark.parametrize(
    "case",
    [
        # 1x1 input, stride larger than the kernel: most output phases are pure fill
        Case(2, 3, 4, (2, 2), (1, 1), (5, 5), (0, 0), (4, 4), (1, 1), 1, True),
        # the classic miss: (o + p - k*d) % s with negative numerators
        Case(1, 2, 2, (3, 3), (4, 5), (3, 2), (3, 3), (2, 1), (2, 3), 1, False),
        # asymmetric everything, grouped
        Case(3, 8, 12, (3, 5), (6, 11), (2, 3), (1, 2), (1, 0), (2, 1), 4, True),
        # depthwise with channel multiplier
        Case(2, 4, 8, (4, 4), (5, 5), (2, 2), (1, 1), (1, 1), (1, 1), 4, True),
        # KernelBench 81 in miniature: stride 5, dilation 2, k=3
        Case(2, 4, 6, (3, 3), (4, 6), (5, 5), (1, 1), (0, 0), (2, 2), 1, False),
        # output_padding legal only through dilation (op >= stride, < dilation)
        Case(1, 2, 3, (2, 2), (3, 3), (1, 1), (0, 0), (1, 2), (2, 3), 1, True),
        # unbatched and non-contiguous
        Case(1, 3, 5, (3, 3), (5, 4), (2, 1), (1, 0), (1, 0), (1, 1), 1, True, unbatched=True),
        Case(3, 3, 5, (3, 2), (5, 4), (1, 2), (0, 1), (0, 1), (1, 1), 1, True, noncontiguous=True),
        # empty batch
        Case(0, 4, 4, (3, 3), (5, 5), (2, 2), (1, 1), (1, 1), (1, 1), 2, True),
        # a larger image, so work is split across threads
        Case(2, 16, 8, (4, 4), (24, 20), (2, 2), (1, 1), (0, 0), (1, 1), 1, True),
        *GEMM_SHAPES,
    ],
)
def test_edge_cases_cpu(case, seed):
    for dtype in (torch.float64, torch.float32):
        check(case, dtype, "cpu", seed, TOL[dtype])


def test_int_and_pair_arguments_agree():
    x, w = torch.randn(2, 4, 5, 6), torch.randn(4, 3, 3, 3)
    a = kernels.conv_transpose2d(x, w, None, 2, 1, 1, 1, 2)
    b = kernels.conv_transpose2d(x, w, None, (2, 2), [1, 1], (1, 1), 1, (2, 2))
    assert torch.equal(a, b)


def test_keyword_call_matches_torch():
    x, w, bias = (torch.randn(2, 4, 5, 6, dtype=torch.float64), torch.randn(4, 4, 3, 2, dtype=torch.float64),
                  torch.randn(8, dtype=torch.float64))
    kw = dict(bias=bias, stride=(2, 1), padding=(1, 0), output_padding=(1, 0), groups=2, dilation=1)
    torch.testing.assert_close(kernels.conv_transpose2d(x, w, **kw), torch.nn.functional.conv_transpose2d(x, w, **kw))


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return {f for line in text.splitlines() if line.startswith("flags") for f in line.split(":", 1)[1].split()}


def test_gemm_form_is_the_widest_the_cpu_runs():
    """Picked by feature bits, not by CPU model (GCC's target_clones gave a virtual Xeon the SSE2 form)."""
    flags = _cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo flags here")
    want = "avx512" if "avx512f" in flags and "avx2" in flags and "fma" in flags else (
        "avx2" if "avx2" in flags and "fma" in flags else "base")
    assert torch.ops.convt.cpu_gemm_form() == want


# The narrower forms, each in a process of its own (CONVT_CPU_ISA is read once a process): this module's
# check() on random cases and on the GEMM's task shapes.
_FORM_CHECK = textwrap.dedent("""
    import random, sys, torch
    from tests.kernels.test_cpu_parity import GEMM_SHAPES, TOL, check
    from tests.kernels.cases import random_case
    form, seed = sys.argv[1], int(sys.argv[2])
    got = torch.ops.convt.cpu_gemm_form()
    assert got == form, f"CONVT_CPU_ISA={form} ran the {got} form"
    rng = random.Random(seed)
    for i, case in enumerate([random_case(rng) for _ in range(60)] + GEMM_SHAPES):
        for dtype in (torch.float64, torch.float32):
            check(case, dtype, "cpu", seed + i, TOL[dtype])
""")


@pytest.mark.parametrize("form", ["avx2", "base"])
def test_each_narrower_gemm_form_cpu(form, seed):
    if form == "avx2" and not {"avx2", "fma"} <= _cpu_flags():
        pytest.skip("this CPU has no AVX2 with FMA")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "CONVT_CPU_ISA": form,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([sys.executable, "-c", _FORM_CHECK, form, str(seed)], capture_output=True, text=True,
                       timeout=600, cwd=root, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def test_a_nonsense_gemm_form_cap_is_refused():
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "CONVT_CPU_ISA": "AVX-2",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([sys.executable, "-c", "import torch, kernels; torch.ops.convt.cpu_gemm_form()"],
                       capture_output=True, text=True, timeout=600, cwd=root, env=env)
    assert r.returncode != 0 and "CONVT_CPU_ISA must be avx512, avx2 or base" in r.stderr, r.stderr[-2000:]
