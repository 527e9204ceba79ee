"""Real servers for the integration tests: ``python -m service`` as a subprocess on
a free loopback port, talked to over HTTP with httpx.

CONVT_TEST_DEVICE (default cpu) picks the servers' device, so the same tests run
against a CUDA server on a GPU machine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
DEVICE = os.environ.get("CONVT_TEST_DEVICE", "cpu")
START_TIMEOUT = float(os.environ.get("CONVT_TEST_START_TIMEOUT", "900"))  # a first start may build the kernels

# Relative-error bound between a server's answer and the model run locally on
# the CPU in float32: the same kernel on CPU; TF32 tensor cores on CUDA.
REL_TOL = 1e-5 if DEVICE == "cpu" else 5e-3


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    log: Path

    def client(self, **kw) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=kw.pop("timeout", 120), **kw)

    def logs(self) -> str:
        return self.log.read_text(errors="replace")

    def assert_alive(self) -> None:
        """The process is up and answers: what every client-error test ends with."""
        assert self.process.poll() is None, f"server exited with {self.process.returncode}:\n{self.logs()[-3000:]}"
        r = httpx.get(f"{self.url}/v2/health/live", timeout=30)
        assert r.status_code == 200 and r.json() == {"live": True}


def server_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "service", "--host", "127.0.0.1", "--port", "0", "--device", DEVICE, *args]


def _env(extra: dict[str, str | None] | None = None) -> dict[str, str]:
    """The test runner's environment with ``extra`` on top (None: variable removed)."""
    env = {k: v for k, v in {**os.environ, **(extra or {})}.items() if v is not None}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("OMP_NUM_THREADS", str(max(1, min(4, os.cpu_count() or 1))))
    return env


def start_server(log: Path, *args: str, env: dict[str, str | None] | None = None) -> Server:
    """Starts a server and returns once it listens (start-up, parity included, done;
    with --workers, once the first worker is serving)."""
    with log.open("wb") as out:
        proc = subprocess.Popen(server_command(*args), cwd=ROOT, env=_env(env), stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        # port 0: the kernel picks a free port and uvicorn logs the one it got, so no race
        m = re.search(r"(?:Uvicorn running|worker \d+ serving) on http://127\.0\.0\.1:(\d+)",
                      log.read_text(errors="replace"))
        if m:
            return Server(f"http://127.0.0.1:{m.group(1)}", proc, log)
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening:\n{log.read_text()[-5000:]}")
        time.sleep(0.1)
    stop_server(proc)
    raise RuntimeError(f"server did not listen within {START_TIMEOUT} s:\n{log.read_text()[-5000:]}")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def running_server(tmp_path_factory, label: str, *args: str, env: dict[str, str | None] | None = None):
    """A server for one module (or the session), stopped when the block ends."""
    server = start_server(tmp_path_factory.mktemp(label) / "server.log", *args, env=env)
    try:
        yield server
    finally:
        stop_server(server.process)


def run_to_exit(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs a server that is expected to refuse to start."""
    return subprocess.run(server_command(*args), cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def dcgan_server(tmp_path_factory) -> Server:
    """The default model with default settings but a small request limit, shared by the session."""
    with running_server(tmp_path_factory, "dcgan", "--max-request-bytes", "4000000") as server:
        yield server


@pytest.fixture(scope="module")
def client(server):
    """A client of the module's own ``server`` fixture."""
    with server.client() as c:
        yield c


def rel_error(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return float(torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b).clamp_min(1e-300))


WORKER = "x-convt-worker"


def fresh(url: str, path: str, method: str = "GET", **kw) -> httpx.Response:
    """One request on a new connection: a kept-alive one would stay with one worker."""
    with httpx.Client(base_url=url, timeout=60, headers={"Connection": "close"}) as c:
        return c.request(method, path, **kw)


def by_worker(url: str, path: str, want: int = 2, tries: int = 200) -> dict[str, httpx.Response]:
    """Asks on fresh connections until ``want`` workers have answered."""
    seen: dict[str, httpx.Response] = {}
    for _ in range(tries):
        r = fresh(url, path)
        seen.setdefault(r.headers[WORKER], r)
        if len(seen) == want:
            break
    return seen


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def alive(pid: int) -> bool:
    """Running, and not a zombie (an orphan's exit is reaped by whoever adopted it, maybe never)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
