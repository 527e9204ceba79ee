"""The Dockerfile: hadolint-clean, its stages consistent (what the runtime looks
for is what the build compiled), and its build context complete.

The image's steps themselves are proven by deploy/image/replay.py, which CI
runs (see .ci/run); these tests check what the replay cannot see."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from .conftest import ROOT, need_tool

sys.path.insert(0, str(ROOT / "deploy" / "image"))
import dockerfile  # noqa: E402
import replay  # noqa: E402

DOCKERFILE = ROOT / "Dockerfile"


def test_hadolint_clean():
    p = subprocess.run([need_tool("hadolint"), "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_hadolint_catches_an_unpinned_base(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text(DOCKERFILE.read_text().replace("nvidia/cuda:13.0.2-base-ubuntu24.04", "nvidia/cuda:latest"))
    p = subprocess.run([need_tool("hadolint"), "--no-color", str(bad)], capture_output=True, text=True)
    assert p.returncode != 0 and "DL3007" in p.stdout


def test_stages_agree():
    build, runtime = replay.stages()
    assert replay.check_stages(build, runtime) == []
    assert build.base.startswith("nvidia/cuda:13.0") and "-devel-" in build.base
    assert runtime.base.startswith("nvidia/cuda:13.0") and "-devel" not in runtime.base  # no compiler at run time
    assert build.args["TORCH_VERSION"].count(".") == 2  # pinned to a release


@pytest.mark.parametrize("change, problem", [
    (("TORCH_CUDA_ARCH_LIST=$CUDA_ARCHS \\\n    CONVT_HOST", "TORCH_CUDA_ARCH_LIST=9.0 \\\n    CONVT_HOST"),
     "TORCH_CUDA_ARCH_LIST: build stage '8.0;8.6;8.9;9.0+PTX', runtime stage '9.0'"),
    (("COPY --from=build /opt/convt/kernels /opt/convt/kernels\n", ""),
     "does not COPY --from=build /opt/convt/kernels"),
    (("USER 10001:10001", "USER root"), "runs as root"),
    (("CONVT_HOST=0.0.0.0", "CONVT_HOST=127.0.0.1"), "unreachable from outside the container"),
    (('ARG CUDA_ARCHS="8.0;8.6;8.9;9.0+PTX"', 'ARG CUDA_ARCHS="8.0;9.0"'), "lacks ['8.6', '8.9'] +PTX"),
    (("RUN deploy/image/install.sh app .", "RUN pip install ."), "does not RUN deploy/image/install.sh app"),
])
def test_stage_check_catches(tmp_path, change, problem):
    text = DOCKERFILE.read_text()
    assert change[0] in text
    bad = tmp_path / "Dockerfile"
    bad.write_text(text.replace(change[0], change[1]))
    problems = replay.check_stages(*replay.stages(bad))
    assert any(problem in p for p in problems), problems


def test_build_context_has_what_the_dockerfile_copies():
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    build, runtime = replay.stages()
    sources = [src for copy in build.copies for src in copy[:-1] if not src.startswith("--")]
    assert sources, "the build stage copies nothing"
    for src in sources:
        assert (ROOT / src).exists(), src
        hits = [pat for pat in ignored if _matches(src, pat)]
        assert not hits, f"{src} is COPYed but .dockerignore excludes it ({hits})"
    # and what the package needs at build time is inside the copied tree
    pyproject = (ROOT / "pyproject.toml").read_text()
    for package in ("kernels", "models", "service"):
        assert f'"{package}*"' in pyproject and package in sources


def _matches(path: str, pattern: str) -> bool:
    """Glob matching as .dockerignore and setuptools' package-data do it: ``*`` and
    ``?`` stop at ``/``, ``**`` does not, and a pattern that matches a directory
    covers all below it."""
    regex = ""
    for part in re.split(r"(\*\*/?|\*|\?)", pattern.strip("/")):
        regex += {"**/": "(.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part))
    return re.fullmatch(f"{regex}(/.*)?", path) is not None


@pytest.mark.parametrize("path, pattern, ignored", [
    ("deploy/image/install.sh", "deploy/*.sh", False), ("deploy/two_gpu_check.sh", "deploy/*.sh", True),
    ("service/__pycache__/a.pyc", "**/__pycache__", True), ("tests/x.py", "tests", True), ("testsx", "tests", False),
])
def test_glob_matching(path, pattern, ignored):
    assert _matches(path, pattern) is ignored


def test_reader_follows_continuations_comments_and_args():
    stages = dockerfile.parse_text(
        'ARG A="x;y"\nFROM img:1 AS one\nARG A\n# a comment\nENV P=/v/bin:$PATH \\\n'
        '    # inside a continuation\n    Q=$A\nRUN echo 1 \\\n && echo 2\n'
        'FROM img:2\nENV Q=$A\nENTRYPOINT ["srv", "--x"]\n')
    one, two = stages["one"], stages["1"]
    assert one.env == {"P": "/v/bin:$PATH", "Q": "x;y"} and one.runs == ["echo 1   && echo 2"]
    assert two.env == {"Q": "$A"}  # a global ARG not redeclared in the stage is not visible there
    assert two.entrypoint == ["srv", "--x"]


def test_install_script_refuses_bad_usage():
    p = subprocess.run(["bash", str(ROOT / "deploy/image/install.sh"), "wheel"], capture_output=True, text=True)
    assert p.returncode == 2 and "usage: install.sh torch | install.sh app SRC" in p.stderr
    p = subprocess.run(["bash", str(ROOT / "deploy/image/install.sh"), "app"], capture_output=True, text=True)
    assert p.returncode != 0 and "usage: install.sh app SRC" in p.stderr


def test_arch_check_reads_the_list_as_torch_does():
    have = ["sm_80.cubin", "sm_86.cubin", "sm_89.cubin", "sm_90a.cubin", "sm_90.ptx"]
    assert replay.missing_archs("8.0;8.6;8.9;9.0+PTX", have) == []
    assert replay.missing_archs("8.0;8.6;8.9;9.0+PTX", have[:-1]) == ["sm_90.ptx"]
    assert replay.missing_archs("9.0;10.0+PTX", have) == ["sm_100.cubin", "sm_100.ptx"]


def test_the_installed_package_carries_every_kernel_source():
    """The image installs convt-serve as a wheel, not from the source tree: a
    source or header left out of package-data is missing there (the kernel's
    cache key hashes every one of them, so the build fails)."""
    from kernels import _build

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["kernels"]
    files = sorted(set(_build.CPU_SOURCES) | set(_build.ENTRY_SOURCES) | set(_build.CUDA_SOURCES) | set(_build.HEADERS))
    missing = [f for f in files if not any(_matches(f"csrc/{f}", g) for g in globs)]
    assert not missing, f"pyproject.toml package-data leaves out {missing}"


def test_the_installed_package_carries_the_json_extension_source():
    from service import native

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["service"]
    sources = sorted(p.name for p in Path(native.__file__).parent.glob("*.cpp"))
    assert sources and all(any(_matches(f"native/{f}", g) for g in globs) for f in sources), sources
