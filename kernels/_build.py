"""Builds and loads the C++/CUDA extensions: the only user of cpp_extension.

Each extension lives in a directory keyed by a hash of its sources, flags, target
architectures and the torch/Python it is built for, under ``$CONVT_BUILD_DIR``
(default ``~/.cache/convt-serve``). A directory that already holds the shared object
is loaded without invoking the compiler, so every start after the first costs
nothing and a prebuilt cache (a Docker image's) needs no compiler at all.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

log = logging.getLogger("convt.build")

CSRC = Path(__file__).resolve().parent / "csrc"
CPU_SOURCES = ("op.cpp", "cpu/convt_cpu.cpp")
ENTRY_SOURCES = ("entry.cpp",)
CUDA_SOURCES = ("cuda/convt_cuda.cu", "cuda/convt_patch.cu", "cuda/convt_rows.cu", "cuda/convt_cells.cu", "cuda/convt_taps.cu", "cuda/convt_stack.cu", "cuda/convt_cols.cu", "cuda/convt_colsw.cu", "cuda/convt_dense.cu", "cuda/convt_dwg.cu", "cuda/convt_dwin.cu", "cuda/convt_edge.cu", "cuda/convt_strip.cu", "cuda/convt_tc.cu", "cuda/convt_wg.cu", "cuda/convt_wgh.cu", "cuda/tma_map.cu")
# Every header, found rather than listed: a header left out of the list would
# leave its edits out of the cache key below, and a stale kernel would load.
HEADERS = tuple(sorted(p.relative_to(CSRC).as_posix() for p in CSRC.rglob("*") if p.suffix in (".h", ".cuh")))
DEFAULT_ARCHS = "8.0;8.6;8.9;9.0+PTX"


class KernelBuildError(RuntimeError):
    """The extension failed to compile or load; the message names the log."""


@dataclass
class BuildState:
    backends: list[str] = field(default_factory=list)
    build_dir: str = ""
    cuda_archs: str | None = None
    build_seconds: dict[str, float] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    entry: object = None  # the typed Python entry module (csrc/entry.cpp)


STATE = BuildState()


def build_root() -> Path:
    return Path(os.environ.get("CONVT_BUILD_DIR", Path.home() / ".cache" / "convt-serve")).expanduser()


def cuda_home() -> str | None:
    """The toolkit root whose bin/ holds the real nvcc.

    A wrapper script named nvcc on PATH makes torch guess the wrong root (it then
    fails to link -lcudart), so follow the wrapper to the nvcc it executes.
    """
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root and (Path(root) / "bin" / "nvcc").exists():
            return root
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    real = Path(nvcc).resolve()
    try:
        text = real.read_text(errors="ignore") if real.stat().st_size < 4096 else ""
    except OSError:
        text = ""
    for token in text.split():
        if token.endswith("/bin/nvcc") and Path(token).exists():
            real = Path(token).resolve()
            break
    root = real.parent.parent
    return str(root) if (root / "lib64").exists() or (root / "lib").exists() else None


def cuda_archs() -> str:
    env = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if env:
        return env
    if torch.cuda.is_available():
        caps = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
        return ";".join(f"{a}.{b}" for a, b in caps)
    return DEFAULT_ARCHS


def gencode_flags(archs: str) -> list[str]:
    """nvcc's -gencode flags for a TORCH_CUDA_ARCH_LIST; Hopper (9.0) builds as sm_90a.

    wgmma and its TMA feed exist only in the arch-specific sm_90a target, and a
    plain sm_90 cubin beside it could be the one the driver loads, so 9.0 gets
    sm_90a alone. `+PTX` stays compute_90 PTX: a JIT for newer GPUs, which
    compute_90a would not give. cpp_extension adds no arch flags of its own once
    any -gencode is given, so every arch is spelled here.
    """
    flags = []
    for arch in archs.replace(" ", ";").split(";"):
        if not arch:
            continue
        base = arch.removesuffix("+PTX")
        num = base.replace(".", "")
        if not (num.removesuffix("a").isdigit() and base.count(".") == 1):
            raise KernelBuildError(f"TORCH_CUDA_ARCH_LIST entry {arch!r} is not an arch like 8.6 or 9.0+PTX")
        cubin = "90a" if num == "90" else num
        flags.append(f"-gencode=arch=compute_{cubin},code=sm_{cubin}")
        if arch.endswith("+PTX"):
            flags.append(f"-gencode=arch=compute_{num},code=compute_{num}")
    return flags


def _headers(root: Path) -> tuple[str, ...]:
    return tuple(sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.suffix in (".h", ".cuh")))


def _key(sources: tuple[str, ...], flags: list[str], extra: str, root: Path = CSRC,
         headers: tuple[str, ...] = HEADERS) -> str:
    h = hashlib.sha256()
    for rel in sorted(set(sources) | set(headers)):
        h.update(rel.encode())
        h.update((root / rel).read_bytes())
    h.update(" ".join(flags).encode())
    h.update(f"{torch.__version__}|{torch.version.cuda}|{sys.version_info[:2]}|{extra}".encode())
    return h.hexdigest()[:16]


def _target(kind: str, sources: tuple[str, ...], flags: list[str], extra_key: str, root: Path = CSRC) -> Path:
    """The shared object this source, flags and target combination builds to."""
    name = f"convt_{kind}_{_key(sources, flags, extra_key, root, HEADERS if root == CSRC else _headers(root))}"
    return build_root() / name / f"{name}.so"


def _import(name: str, so: Path):
    """A prebuilt pybind11 module, by path (its PyInit_ carries the hashed name it was built as)."""
    spec = importlib.util.spec_from_file_location(name, so)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load(kind: str, sources: tuple[str, ...], cflags: list[str], cuda_flags: list[str], ldflags: list[str],
          extra_key: str, root: Path = CSRC, python_module: bool = False):
    """Loads (building first when no cached build matches) the torch op library, or with
    ``python_module`` the pybind11 module, that ``sources`` under ``root`` build to."""
    so = _target(kind, sources, cflags + cuda_flags + ldflags, extra_key, root)
    directory, name = so.parent, so.stem
    what = "extension" if python_module else "kernel"
    STATE.build_dir = str(build_root())
    if so.exists():
        t0 = time.perf_counter()
        try:
            module = _import(name, so) if python_module else torch.ops.load_library(str(so))
        except (OSError, ImportError) as exc:
            raise KernelBuildError(f"loading the prebuilt {kind} {what} {so} failed: {exc}") from exc
        STATE.cached[kind] = True
        STATE.build_seconds[kind] = round(time.perf_counter() - t0, 3)
        log.info("loaded prebuilt %s %s from %s", kind, what, so)
        return module
    directory.mkdir(parents=True, exist_ok=True)
    log.warning("building the %s %s into %s; the first build takes minutes, later starts reuse it", kind, what,
                directory)
    from torch.utils import cpp_extension

    if kind == "cuda":  # cpp_extension resolved CUDA_HOME at its import, possibly from the wrapper
        cpp_extension.CUDA_HOME = os.environ["CUDA_HOME"]
    t0 = time.perf_counter()
    try:
        module = cpp_extension.load(
            name=name,
            sources=[str(root / s) for s in sources],
            extra_cflags=cflags,
            extra_cuda_cflags=cuda_flags,
            extra_ldflags=ldflags,
            build_directory=str(directory),
            is_python_module=python_module,
            verbose=False,
        )
    except Exception as exc:  # cpp_extension raises RuntimeError/subprocess errors with the compiler output
        log_path = directory / "build.log"
        log_path.write_text(str(exc))
        raise KernelBuildError(f"building the {kind} {what} failed; compiler log: {log_path}") from exc
    STATE.cached[kind] = False
    STATE.build_seconds[kind] = round(time.perf_counter() - t0, 1)
    log.warning("built the %s %s in %.0f s", kind, what, STATE.build_seconds[kind])
    return module


def load_module(kind: str, root: Path, sources: tuple[str, ...], cflags: list[str]):
    """A CPU pybind11 module of another package (its sources and headers under ``root``),
    cached, keyed and prebuilt like the kernels; recorded in build_info under ``kind``."""
    return _load(kind, sources, cflags, [], [], "python-module", root, python_module=True)


def load_cpu() -> None:
    omp = [] if os.environ.get("CONVT_CPU_OPENMP") == "0" else ["-fopenmp"]
    _load("cpu", CPU_SOURCES, ["-O3", *omp], [], omp, "")
    STATE.backends.append("cpu")


def load_entry():
    """The typed Python entry to the op (csrc/entry.cpp), after the op library that defines its schema."""
    return _load("entry", ENTRY_SOURCES, ["-O3"], [], [], "python-module", python_module=True)


def load_cuda(required: bool = False) -> None:
    """Builds the CUDA extension where a CUDA torch and nvcc are present.

    Without them the CUDA backend is skipped (recorded in build_info); with
    ``required`` (or CONVT_REQUIRE_CUDA=1) their absence is an error.
    """
    required = required or os.environ.get("CONVT_REQUIRE_CUDA") == "1"
    reason = None
    home = cuda_home()
    cflags, cuda_flags = ["-O3"], ["-O3", "-lineinfo"]
    archs = cuda_archs()
    cuda_flags += gencode_flags(archs)
    key = f"archs={archs}"
    if os.environ.get("CONVT_BUILD_CUDA") == "0":
        reason = "CONVT_BUILD_CUDA=0"
    elif torch.version.cuda is None:
        reason = "this torch build has no CUDA"
    elif home is None and not _target("cuda", CUDA_SOURCES, cflags + cuda_flags, key).exists():
        # a prebuilt kernel (a Docker image's) loads without a toolkit; building one needs nvcc
        reason = (f"nvcc not found (set CUDA_HOME to the CUDA toolkit root) and no prebuilt CUDA kernel for "
                  f"TORCH_CUDA_ARCH_LIST={archs} in {build_root()}")
    if reason is not None:
        STATE.skipped["cuda"] = reason
        if required:
            raise KernelBuildError(f"CUDA backend required but not built: {reason}")
        log.info("CUDA backend not built: %s", reason)
        return
    if home is not None:
        os.environ["CUDA_HOME"] = home
    os.environ["TORCH_CUDA_ARCH_LIST"] = archs
    STATE.cuda_archs = archs
    _load("cuda", CUDA_SOURCES, cflags, cuda_flags, [], key)
    STATE.backends.append("cuda")


def ensure_loaded() -> None:
    if not STATE.backends:
        load_cpu()
        STATE.entry = load_entry()
        load_cuda()
