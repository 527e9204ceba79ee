import pytest

from .cases import WORST, session_seed

SEED = session_seed()


def pytest_report_header(config):
    return f"convt randomized kernel tests: CONVT_TEST_SEED={SEED}"


@pytest.fixture(scope="session")
def seed() -> int:
    return SEED


def pytest_terminal_summary(terminalreporter):
    if WORST:
        terminalreporter.write_line("worst relative error vs float64 per device/dtype (checks):")
        for key in sorted(WORST):
            worst, count = WORST[key]
            terminalreporter.write_line(f"  {key:16} {worst:.3e}  ({count} checks)")


@pytest.fixture(autouse=True)
def _our_kernels_are_registered():
    """Kernel tests must exercise the C++ kernels, never a Python override
    (tests/service/faulty_model.py replaces them in its own server process)."""
    import torch

    import kernels  # noqa: F401

    table = torch._C._dispatch_dump("convt::conv_transpose2d")
    for line in table.splitlines():
        if line.startswith(("CPU:", "CUDA:")):
            assert "/kernels/csrc/" in line, f"our kernel is overridden:\n{table}"
