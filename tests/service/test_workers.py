"""--workers 2: two server processes on one port, each with its own model and
parity gate; readiness is the group's; signals and a dead worker stop them all.

On the CPU (CI) both workers share the CPU; with CONVT_TEST_DEVICE=cuda on a
machine with two GPUs, worker i serves on cuda:i.
"""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import torch

import models

from .conftest import (DEVICE, REL_TOL, WORKER, alive, by_worker, fresh, rel_error, run_to_exit, running_server,
                       stop_server, wait_for)

if DEVICE.startswith("cuda") and torch.cuda.device_count() < 2:
    pytest.skip("two CUDA workers need two GPUs", allow_module_level=True)

EXIT_BAD_SETTINGS, EXIT_STARTUP_FAILED, EXIT_WORKER_DIED = 2, 3, 4


def expected_device(index: int) -> str:
    return "cpu" if DEVICE == "cpu" else f"cuda:{index}"



@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory, "workers", "--workers", "2") as s:
        wait_for(lambda: fresh(s.url, "/v2/health/ready").status_code == 200, 300, "both workers ready")
        yield s


def test_both_workers_serve_inference(server):
    module = models.load_model("dcgan").module.eval()
    x = torch.randn(2, 100, 1, 1, generator=torch.Generator().manual_seed(5))
    body = {"inputs": [{"name": "latent", "shape": [2, 100, 1, 1], "datatype": "FP32", "data": x.flatten().tolist()}]}
    want = module(x).detach()

    def infer(_):
        r = fresh(server.url, "/v2/models/dcgan/infer", "POST", json=body)
        assert r.status_code == 200, r.text
        out = r.json()["outputs"][0]
        assert rel_error(torch.tensor(out["data"]).reshape(out["shape"]), want) < REL_TOL
        return r.headers[WORKER]

    answered: set[str] = set()
    with ThreadPoolExecutor(4) as pool:
        for _ in range(10):  # bounded: 10 rounds of 8 concurrent requests at most
            answered |= set(pool.map(infer, range(8)))
            if answered == {"0", "1"}:
                break
    assert answered == {"0", "1"}, f"only worker(s) {answered} answered 80 requests"


def test_each_worker_reports_its_own_device_and_index(server):
    answers = by_worker(server.url, "/health")
    assert set(answers) == {"0", "1"}
    pids = set()
    for header, r in answers.items():
        assert r.status_code == 200
        report = r.json()
        index = int(header)
        assert report["worker"]["index"] == index and report["worker"]["count"] == 2
        assert report["worker"]["ready"] == [True, True]
        assert report["device"] == expected_device(index) and report["passed"]
        pids.add(report["worker"]["pid"])
    assert len(pids) == 2 and server.process.pid not in pids


def test_metrics_name_the_worker_and_its_device(server):
    for header, r in by_worker(server.url, "/metrics").items():
        text = r.text
        assert f'worker="{header}"' in text and 'workers="2"' in text
        assert f'device="{expected_device(int(header))}"' in text
        assert "convt_workers_ready 2.0" in text


def test_ready_only_when_every_worker_is(tmp_path_factory, tmp_path):
    gate = tmp_path / "gate"
    with running_server(tmp_path_factory, "gated", "--workers", "2", "--model", "tests.service.gated_model:factory",
                        env={"CONVT_TEST_GATE": str(gate)}) as s:
        # worker 1 waits at the gate, so worker 0 answers everything
        for _ in range(5):
            r = fresh(s.url, "/v2/health/ready")
            assert (r.status_code, r.json(), r.headers[WORKER]) == (503, {"ready": False}, "0")
        r = fresh(s.url, "/v2/models/dcgan/ready")
        assert (r.status_code, r.json()) == (503, {"name": "dcgan", "ready": False})
        r = fresh(s.url, "/health")
        assert r.status_code == 200 and r.json()["worker"]["ready"] == [True, False]
        assert fresh(s.url, "/metrics").text.count("convt_workers_ready 1.0") == 1
        gate.touch()
        wait_for(lambda: fresh(s.url, "/v2/health/ready").status_code == 200, 300, "worker 1 past the gate")
        answers = by_worker(s.url, "/v2/health/ready")
        assert {h: (r.status_code, r.json()) for h, r in answers.items()} == {
            "0": (200, {"ready": True}), "1": (200, {"ready": True})}


def test_sigterm_stops_every_worker(tmp_path_factory):
    with running_server(tmp_path_factory, "sigterm", "--workers", "2") as s:
        wait_for(lambda: fresh(s.url, "/v2/health/ready").status_code == 200, 300, "both workers ready")
        pids = [r.json()["worker"]["pid"] for r in by_worker(s.url, "/health").values()]
        s.process.send_signal(signal.SIGTERM)
        assert s.process.wait(timeout=60) == 0, s.logs()[-3000:]
        for pid in pids:
            wait_for(lambda: not alive(pid), 10, f"worker pid {pid} to exit")
        assert "SIGTERM: stopping 2 workers" in s.logs()


def test_a_dead_worker_stops_the_server(tmp_path_factory):
    with running_server(tmp_path_factory, "dead", "--workers", "2") as s:
        wait_for(lambda: fresh(s.url, "/v2/health/ready").status_code == 200, 300, "both workers ready")
        answers = by_worker(s.url, "/health")
        victim = answers["1"].json()["worker"]["pid"]
        survivor = answers["0"].json()["worker"]["pid"]
        os.kill(victim, signal.SIGKILL)
        assert s.process.wait(timeout=60) == EXIT_WORKER_DIED, s.logs()[-3000:]
        wait_for(lambda: not alive(survivor), 30, "the other worker to exit")
        assert f"worker 1 (pid {victim}) was killed by SIGKILL" in s.logs()
        with pytest.raises(httpx.ConnectError):
            fresh(s.url, "/v2/health/live")
        stop_server(s.process)


def test_a_killed_parent_takes_its_workers_along(tmp_path_factory):
    with running_server(tmp_path_factory, "orphans", "--workers", "2") as s:
        wait_for(lambda: fresh(s.url, "/v2/health/ready").status_code == 200, 300, "both workers ready")
        pids = [r.json()["worker"]["pid"] for r in by_worker(s.url, "/health").values()]
        s.process.kill()  # SIGKILL: no signal reaches the workers
        s.process.wait(timeout=10)
        for pid in pids:
            wait_for(lambda: not alive(pid), 15, f"orphaned worker pid {pid} to exit")
        assert s.logs().count("the parent process is gone: stopping") == 2


def test_a_worker_start_up_failure_fails_the_server():
    p = run_to_exit("--workers", "2", "--model", "no-such-model")
    assert p.returncode == EXIT_STARTUP_FAILED
    out = p.stdout + p.stderr
    assert "start-up failed: unknown model 'no-such-model'" in out and "exited with 3" in out


def test_workers_refused_settings():
    p = run_to_exit("--workers", "0")
    assert p.returncode == EXIT_BAD_SETTINGS and "workers: Input should be greater than or equal to 1" in p.stderr
    p = run_to_exit("--workers", "2", "--device", "cuda:0")
    assert p.returncode == EXIT_BAD_SETTINGS and "--device cuda:0 pins one GPU but --workers is 2" in p.stderr


@pytest.mark.skipif(torch.cuda.device_count() >= 3, reason="this machine has enough GPUs for three workers")
def test_more_cuda_workers_than_gpus():
    p = run_to_exit("--workers", "3", "--device", "cuda")
    assert p.returncode == EXIT_STARTUP_FAILED
    assert f"--workers 3 needs 3 CUDA devices, one per worker, but torch sees {torch.cuda.device_count()}" in p.stderr
