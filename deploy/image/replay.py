"""The Docker image's build, replayed without a Docker engine (none runs on our
machines): CI's proof that the image's steps work.

  python3 deploy/image/replay.py --venv DIR --build-dir DIR [--report FILE]
  python3 deploy/image/replay.py --print NAME    # a build-stage ENV value, e.g. TORCH_CUDA_ARCH_LIST

1. Checks that the Dockerfile's stages agree: the runtime stage copies the build
   stage's venv and kernel directory and looks for kernels where, and for the
   architectures that, the build stage compiled them (else a container start
   would compile), runs as non-root, listens on 0.0.0.0 at its EXPOSEd port.
2. Runs the build stage's RUN lines, in order, from the repository root (the
   build context) with the stage's ENV and ARGs, except apt-get (this machine
   already has python3-venv, g++ and nvcc). What must differ here is printed:
   the venv and kernel paths, CUDA_HOME, and TORCH_VERSION (empty: only PyPI
   and the machine's torch are reachable here, not PyTorch's wheel index).
3. Starts the runtime stage's ENTRYPOINT with the runtime ENV, from an empty
   directory, with nothing on PATH (no nvcc, gcc, g++, c++, cc or ninja) and no
   CUDA_HOME, and requires /v2/health/ready and /health to pass with every
   kernel, and the JSON extension (service/native), loaded from the prebuilt directory.

Standard library only: it runs before any virtual environment exists.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dockerfile import Stage, parse  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
COMPILERS = ("nvcc", "gcc", "g++", "c++", "cc", "clang", "ninja")
REQUIRED_ARCHS = ("8.0", "8.6", "8.9", "9.0")
START_TIMEOUT = 300


def stages(path: Path = DOCKERFILE) -> tuple[Stage, Stage]:
    """The build stage and the final (runtime) stage."""
    all_stages = parse(path)
    if "build" not in all_stages:
        raise SystemExit(f"{path}: no stage named 'build'")
    return all_stages["build"], list(all_stages.values())[-1]


def check_stages(build: Stage, runtime: Stage) -> list[str]:
    """What would make the image compile at start, or not serve: one line each."""
    problems = []
    for key in ("VIRTUAL_ENV", "CONVT_BUILD_DIR", "TORCH_CUDA_ARCH_LIST"):
        if not build.env.get(key) or build.env.get(key) != runtime.env.get(key):
            problems.append(f"{key}: build stage {build.env.get(key)!r}, runtime stage {runtime.env.get(key)!r}")
    for key in ("VIRTUAL_ENV", "CONVT_BUILD_DIR"):
        path = build.env.get(key)
        if ["--from=build", path, path] not in runtime.copies:
            problems.append(f"the runtime stage does not COPY --from=build {path} {path} (${key})")
    archs = build.env.get("TORCH_CUDA_ARCH_LIST", "").replace("+PTX", "").split(";")
    missing = [a for a in REQUIRED_ARCHS if a not in archs]
    if missing or "+PTX" not in build.env.get("TORCH_CUDA_ARCH_LIST", ""):
        problems.append(f"TORCH_CUDA_ARCH_LIST {build.env.get('TORCH_CUDA_ARCH_LIST')!r} lacks "
                        f"{missing or ''}{' +PTX' if '+PTX' not in build.env.get('TORCH_CUDA_ARCH_LIST', '') else ''}")
    for step in ("deploy/image/install.sh torch", "deploy/image/install.sh app"):
        if not any(run.startswith(step) for run in build.runs):
            problems.append(f"the build stage does not RUN {step}")
    if runtime.user is None or runtime.user.split(":")[0] in ("root", "0"):
        problems.append(f"the runtime stage runs as {runtime.user or 'root'}")
    if runtime.env.get("CONVT_HOST") != "0.0.0.0":
        problems.append(f"CONVT_HOST is {runtime.env.get('CONVT_HOST')!r}: unreachable from outside the container")
    if runtime.env.get("CONVT_PORT") not in runtime.expose:
        problems.append(f"CONVT_PORT {runtime.env.get('CONVT_PORT')!r} is not EXPOSEd ({runtime.expose})")
    if runtime.entrypoint[:1] != ["convt-serve"]:
        problems.append(f"ENTRYPOINT is {runtime.entrypoint}, not the server CLI")
    if "/v2/health/ready" not in (runtime.healthcheck or ""):
        problems.append("no HEALTHCHECK on /v2/health/ready")
    return problems


def cuda_home() -> str | None:
    nvcc = shutil.which("nvcc")
    if os.environ.get("CUDA_HOME"):
        return os.environ["CUDA_HOME"]
    if nvcc is None:
        return None
    text = Path(nvcc).read_text(errors="ignore") if Path(nvcc).stat().st_size < 4096 else ""
    real = next((t for t in text.split() if t.endswith("/bin/nvcc")), nvcc)  # a wrapper script execs the real one
    return str(Path(real).resolve().parent.parent)


def replay_build(build: Stage, venv: Path, build_dir: Path) -> dict:
    if venv.exists():
        raise SystemExit(f"{venv} exists: the replay installs into a fresh virtual environment")
    overrides = {
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "CONVT_BUILD_DIR": str(build_dir),
        "CUDA_HOME": cuda_home() or "",
        "TORCH_VERSION": "",
    }
    env = {**os.environ, **build.args, **build.env, **overrides}
    print("replay: build stage from", DOCKERFILE.name, "| differs from the image in:",
          ", ".join(f"{k}={v if k != 'PATH' else str(venv / 'bin') + ':$PATH'}" for k, v in overrides.items()),
          flush=True)
    before = set(build_dir.glob("*/*.so")) if build_dir.exists() else set()
    steps = []
    for run in build.runs:
        if run.startswith("apt-get"):
            print(f"replay: skip (system packages; this machine has them): RUN {run[:90]}...", flush=True)
            steps.append({"run": run, "skipped": "apt-get"})
            continue
        print(f"replay: RUN {run}", flush=True)
        t0 = time.monotonic()
        subprocess.run(["bash", "-o", "pipefail", "-c", run], cwd=ROOT, env=env, check=True)
        steps.append({"run": run, "seconds": round(time.monotonic() - t0, 1)})
        print(f"replay: RUN done in {steps[-1]['seconds']} s", flush=True)
    built = sorted(str(p.relative_to(build_dir)) for p in set(build_dir.glob("*/*.so")) - before)
    return {"steps": steps, "compiled": built, "overrides": overrides,
            "cuda_binaries": cuda_binaries(build_dir, venv, overrides["CUDA_HOME"])}


def cuda_binaries(build_dir: Path, venv: Path, home: str) -> list[str] | str:
    """The GPU code in the CUDA kernel (sm_XX.cubin, sm_XX.ptx), read with cuobjdump
    where one is at hand (the toolkit's, or the one triton ships)."""
    tools = [Path(home) / "bin" / "cuobjdump",
             *venv.glob("lib/python*/site-packages/triton/backends/nvidia/bin/cuobjdump")]
    tool = next((t for t in tools if t.exists()), None)
    sos = sorted(build_dir.glob("convt_cuda_*/*.so"))
    if tool is None or not sos:
        return "not checked: no cuobjdump" if tool is None else "no CUDA kernel"
    listing = subprocess.run([str(tool), "--list-elf", "--list-ptx", str(sos[-1])], capture_output=True, text=True)
    return sorted(set(re.findall(r"\.((?:sm|compute)_\d+a?\.(?:cubin|ptx))\b", listing.stdout)))


def missing_archs(archs: str, binaries: list[str]) -> list[str]:
    """The cubin (and, for +PTX, ptx) files that TORCH_CUDA_ARCH_LIST asks for and the kernel lacks.

    Hopper's cubin is sm_90a (kernels/_build.py builds 9.0 with wgmma); its PTX stays sm_90.
    """
    bases = [a.removesuffix("+PTX") for a in archs.split(";")]
    want = [f"sm_{'9.0a' if b == '9.0' else b}.cubin".replace(".", "", 1) for b in bases]
    want += [f"sm_{a.replace('+PTX', '').replace('.', '')}.ptx" for a in archs.split(";") if a.endswith("+PTX")]
    return [w for w in want if w not in binaries]


def runtime_env(runtime: Stage, venv: Path, build_dir: Path, home: Path, no_tools: Path) -> dict[str, str]:
    env = {**runtime.args, **runtime.env}
    env.update(VIRTUAL_ENV=str(venv), CONVT_BUILD_DIR=str(build_dir), PATH=str(no_tools), HOME=str(home),
               CONVT_HOST="127.0.0.1", CONVT_PORT="0")  # here: loopback only, and any free port
    for key in ("LANG", "LC_ALL", "TMPDIR"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def start_runtime(runtime: Stage, venv: Path, build_dir: Path, workdir: Path) -> dict:
    no_tools, home = workdir / "empty-path", workdir / "home"
    no_tools.mkdir()
    home.mkdir()
    env = runtime_env(runtime, venv, build_dir, home, no_tools)
    reachable = {tool: shutil.which(tool, path=env["PATH"]) for tool in COMPILERS}
    if any(reachable.values()) or "CUDA_HOME" in env or "CUDA_PATH" in env:
        raise SystemExit(f"replay: a compiler is reachable from the server's environment: {reachable}")
    command = [str(venv / "bin" / runtime.entrypoint[0]), *runtime.entrypoint[1:]]
    log_path = workdir / "server.log"
    print(f"replay: start {' '.join(command)} with PATH={no_tools} (empty), no CUDA_HOME, "
          f"TORCH_CUDA_ARCH_LIST={env['TORCH_CUDA_ARCH_LIST']}", flush=True)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = _wait_listening(proc, log_path)
        ready = _wait_ready(url, proc, log_path)
        status, health = _get(f"{url}/health")
        kernel = health.get("kernel", {})
        result = {"url": url, "ready": ready, "health_status": status, "health_passed": health.get("passed"),
                  "device": health.get("device"), "kernel": kernel, "compilers_reachable": reachable}
        logs = log_path.read_text(errors="replace")
        problems = []
        if status != 200 or not health.get("passed"):
            problems.append(f"/health answered {status}: {json.dumps(health)[:2000]}")
        backends = kernel.get("backends") or []
        cached = kernel.get("from_cache", {})
        if not backends or not all(cached.get(b) for b in [*backends, "json"]) or not all(cached.values()):
            problems.append(f"kernels and the JSON extension not all loaded prebuilt: {kernel}")
        if "cuda" not in backends:
            problems.append(f"the prebuilt CUDA kernel did not load: {kernel.get('skipped')}")
        if "building the" in logs:
            problems.append("the server started a kernel build")
        result["problems"] = problems
        return result
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        print(f"replay: server log ({log_path}), last lines:\n" +
              "\n".join(log_path.read_text(errors="replace").splitlines()[-12:]), flush=True)


def _wait_listening(proc: subprocess.Popen, log_path: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        m = re.search(r"(?:Uvicorn running|worker \d+ serving) on (http://127\.0\.0\.1:\d+)",
                      log_path.read_text(errors="replace"))
        if m:
            return m.group(1)
        if proc.poll() is not None:
            raise SystemExit(f"replay: the server exited with {proc.returncode}:\n"
                             f"{log_path.read_text(errors='replace')[-5000:]}")
        time.sleep(0.2)
    raise SystemExit(f"replay: the server did not listen within {START_TIMEOUT} s")


def _wait_ready(url: str, proc: subprocess.Popen, log_path: Path) -> bool:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if _get(f"{url}/v2/health/ready")[0] == 200:
            return True
        if proc.poll() is not None:
            raise SystemExit(f"replay: the server exited with {proc.returncode}")
        time.sleep(0.5)
    return False


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="replay.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, help="fresh virtual environment to create and install into")
    parser.add_argument("--build-dir", type=Path, help="CONVT_BUILD_DIR for the kernels")
    parser.add_argument("--report", type=Path, help="write the replay's findings here as JSON")
    parser.add_argument("--print", dest="print_name", metavar="NAME", help="print a build-stage ENV value and exit")
    args = parser.parse_args(argv)
    build, runtime = stages()
    if args.print_name:
        print(build.env[args.print_name])
        return 0
    if args.venv is None or args.build_dir is None:
        parser.error("--venv and --build-dir are required to replay")
    problems = check_stages(build, runtime)
    if problems:
        print("replay: the Dockerfile's stages disagree:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print(f"replay: stages agree (kernels for {build.env['TORCH_CUDA_ARCH_LIST']} in {build.env['CONVT_BUILD_DIR']})")
    venv, build_dir = args.venv.resolve(), args.build_dir.resolve()
    t0 = time.monotonic()
    report = {"build": replay_build(build, venv, build_dir)}
    report["build_seconds"] = round(time.monotonic() - t0, 1)
    with tempfile.TemporaryDirectory(prefix="convt-replay-") as tmp:
        report["runtime"] = start_runtime(runtime, venv, build_dir, Path(tmp))
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=1))
    rt = report["runtime"]
    binaries = report["build"]["cuda_binaries"]
    if isinstance(binaries, list):
        missing = missing_archs(build.env["TORCH_CUDA_ARCH_LIST"], binaries)
        if missing:
            rt["problems"].append(f"the CUDA kernel lacks {missing} (has {binaries})")
    print(f"replay: build {report['build_seconds']} s, compiled {report['build']['compiled'] or 'nothing (reused)'}; "
          f"server on {rt['device']}: ready {rt['ready']}, /health {rt['health_status']}, "
          f"kernels {rt['kernel'].get('backends')} from cache {rt['kernel'].get('from_cache')}, "
          f"compilers reachable: {[t for t, p in rt['compilers_reachable'].items() if p] or 'none'}; "
          f"GPU code in the CUDA kernel: {binaries}")
    if rt["problems"] or not rt["ready"]:
        print("replay FAILED:\n  " + "\n  ".join(rt["problems"] or ["never ready"]), file=sys.stderr)
        return 1
    print("replay passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
