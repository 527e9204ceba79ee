"""SIGTERM drains: the server stops accepting, answers every request it accepted,
and exits 0, alone, as a --workers supervisor and with --frontends (whose device
process answers what the front ends accepted before it stops).

The slow model (slow_model.py) sleeps per request for the seconds its input asks
and logs each forward's start and end to a file, so the test sends SIGTERM while
it knows a forward is running and others wait behind it.
"""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import torch

from .conftest import DEVICE, start_server, stop_server

INFER = "/v2/models/slow/infer"
SLOW_MARK = 4242.0  # slow_model.SLOW_MARK: test models are loaded by the server only, never imported here
REQUESTS = 4
SECONDS = 1.5  # each forward; the forwards run one at a time per worker
WAIT = 120  # generous bound on every wait below


def request(seconds: float) -> dict:
    return {"inputs": [{"name": "input__0", "shape": [1, 4, 5, 5], "datatype": "FP32",
                        "data": [seconds] + [0.0] * 98 + [SLOW_MARK]}]}


def starts(log: Path) -> int:
    return log.read_text().count("start ") if log.exists() else 0


def post(url: str) -> httpx.Response | Exception:
    try:
        with httpx.Client(base_url=url, timeout=WAIT) as c:
            return c.post(INFER, json=request(SECONDS))
    except httpx.HTTPError as exc:
        return exc


def refused(url: str) -> bool:
    """No new request is served: the connection is refused, or (with --workers, whose listening socket
    stays open until the last worker closes it) accepted into the kernel's backlog and then reset
    unanswered when the socket closes."""
    try:
        with httpx.Client(base_url=url, timeout=5) as c:
            c.get("/v2/health/live")
        return False
    except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
        return True


@pytest.mark.parametrize("processes", [[], ["--workers", "2"], ["--frontends", "2"]], ids=["one", "workers", "frontends"])
def test_sigterm_finishes_accepted_requests_and_exits_0(tmp_path, processes):
    if "--workers" in processes and DEVICE.startswith("cuda") and torch.cuda.device_count() < 2:
        pytest.skip("CUDA workers need one GPU each")
    slow_log = tmp_path / "forwards.log"
    # One forward per request, so each accepted request shows in the slow log (batching would merge them).
    args = ["--model", "tests.service.slow_model:factory", "--max-batch-size", "1", *processes]
    server = start_server(tmp_path / "server.log", *args, env={"CONVT_TEST_SLOW_LOG": str(slow_log)})
    try:
        with ThreadPoolExecutor(REQUESTS) as pool:
            futures = [pool.submit(post, server.url) for _ in range(REQUESTS)]
            # wait for the second forward on one worker (or one on each of two): every
            # request was sent long before, and at least one forward is in flight
            deadline = time.monotonic() + WAIT
            while starts(slow_log) < 2:
                failed = [f.result() for f in futures if f.done() and not isinstance(f.result(), httpx.Response)]
                assert not failed and time.monotonic() < deadline, f"requests did not reach the model: {failed}"
                time.sleep(0.05)
            server.process.send_signal(signal.SIGTERM)
            # stops accepting while the accepted requests are still being answered
            while not refused(server.url):
                assert time.monotonic() < deadline, "still accepting connections after SIGTERM"
                time.sleep(0.05)
            assert not all(f.done() for f in futures), "the requests finished before the listener closed"
            answers = [f.result() for f in futures]
        assert server.process.wait(timeout=WAIT) == 0, server.logs()[-3000:]
    finally:
        stop_server(server.process)
    for r in answers:
        assert isinstance(r, httpx.Response) and r.status_code == 200, r
        assert r.json()["outputs"][0]["shape"] == [1, 2, 11, 11]
    assert slow_log.read_text().count("end ") == REQUESTS
    assert "unhandled error" not in server.logs()
