"""The nvcc arch flags the build derives from TORCH_CUDA_ARCH_LIST (no GPU needed)."""

import pytest

from kernels import _build


def test_hopper_is_built_arch_specific_and_ptx_stays_portable():
    assert _build.gencode_flags("8.0;8.6;8.9;9.0+PTX") == [
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_86,code=sm_86",
        "-gencode=arch=compute_89,code=sm_89",
        "-gencode=arch=compute_90a,code=sm_90a",  # wgmma lives only in sm_90a
        "-gencode=arch=compute_90,code=compute_90",  # a JIT for newer GPUs
    ]
    assert _build.gencode_flags("9.0") == ["-gencode=arch=compute_90a,code=sm_90a"]
    assert _build.gencode_flags("9.0a 10.0+PTX") == [
        "-gencode=arch=compute_90a,code=sm_90a",
        "-gencode=arch=compute_100,code=sm_100",
        "-gencode=arch=compute_100,code=compute_100",
    ]


@pytest.mark.parametrize("bad", ["sm_90", "9", "Hopper", "9.0.1"])
def test_an_unreadable_arch_is_refused_by_name(bad):
    with pytest.raises(_build.KernelBuildError, match=f"entry '{bad}' is not an arch"):
        _build.gencode_flags(bad)
