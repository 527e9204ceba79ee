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
