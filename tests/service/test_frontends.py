"""--frontends 2: two HTTP front ends on one port feeding one device process.

A front end must answer exactly as a single process does (outputs, errors,
metadata), batch across front ends, keep the device process's metrics, parity
and deadline, and stop with the device process (and it with them).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal

import httpx
import numpy as np
import pytest
import torch

from .bad_bodies import CORPUS
from .conftest import DEVICE, WORKER, alive, by_worker, fresh, run_to_exit, running_server, stop_server, wait_for
from .test_batching import assert_same_answer, batch_histogram, binary_request, output_of

INFER = "/v2/models/dcgan/infer"
EXIT_BAD_SETTINGS, EXIT_STARTUP_FAILED, EXIT_WORKER_DIED = 2, 3, 4


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory, "frontends", "--frontends", "2", "--max-batch-size", "16",
                        "--max-request-bytes", "4000000") as s:
        wait_for(lambda: fresh(s.url, "/v2/health/ready").status_code == 200, 300, "the device process ready")
        yield s


def test_both_front_ends_answer(server):
    answers = by_worker(server.url, "/v2/health/ready")
    assert sorted(answers) == ["0", "1"], answers
    assert all(r.status_code == 200 and r.json() == {"ready": True} for r in answers.values())


def test_answers_equal_a_single_process(server, dcgan_server):
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(3, 100, 1, 1, generator=gen)
    body, headers = binary_request(x)
    got = httpx.post(server.url + INFER, content=body, headers=headers, timeout=120)
    want = httpx.post(dcgan_server.url + INFER, content=body, headers=headers, timeout=120)
    assert got.status_code == want.status_code == 200, got.text
    np.testing.assert_array_equal(output_of(got), output_of(want))
    # a body over shared.SHARE_MIN: read into shared memory, read in place by the device process
    large, headers = binary_request(torch.randn(660, 100, 1, 1, generator=gen))
    got, want = (httpx.post(u + INFER, content=large, headers=headers, timeout=300) for u in (server.url, dcgan_server.url))
    assert len(large) > 256 << 10 and got.status_code == want.status_code == 200, got.text
    np.testing.assert_array_equal(output_of(got), output_of(want))
    # an answer over shared.SHARE_MIN (20 rows, 983 KB) comes back through an output slot, on CUDA copied there
    # from the GPU; more such requests than there are slots, so slots given back are taken again
    mid, headers = binary_request(torch.randn(20, 100, 1, 1, generator=gen))
    want = httpx.post(dcgan_server.url + INFER, content=mid, headers=headers, timeout=120)
    for _ in range(12):
        got = httpx.post(server.url + INFER, content=mid, headers=headers, timeout=120)
        assert got.status_code == want.status_code == 200, got.text
        np.testing.assert_array_equal(output_of(got), output_of(want))
    as_json = {"id": "j1", "inputs": [{"name": "latent", "shape": [1, 100, 1, 1], "datatype": "FP32",
                                       "data": x[0].flatten().tolist()}]}
    got, want = (httpx.post(u + INFER, json=as_json, timeout=120) for u in (server.url, dcgan_server.url))
    assert got.status_code == 200 and got.json() == want.json()
    got, want = (httpx.get(u + "/v2/models/dcgan", timeout=30) for u in (server.url, dcgan_server.url))
    assert got.json() == want.json()


BAD = [
    ("wrong shape", {"inputs": [{"name": "latent", "shape": [1, 99, 1, 1], "datatype": "FP32", "data": [0.0] * 99}]}),
    ("unknown input", {"inputs": [{"name": "z", "shape": [1, 100, 1, 1], "datatype": "FP32", "data": [0.0] * 100}]}),
    ("datatype", {"inputs": [{"name": "latent", "shape": [1, 100, 1, 1], "datatype": "FP16", "data": [0.0] * 100}]}),
    ("data count", {"inputs": [{"name": "latent", "shape": [1, 100, 1, 1], "datatype": "FP32", "data": [0.0] * 7}]}),
    ("unknown output", {"inputs": [{"name": "latent", "shape": [1, 100, 1, 1], "datatype": "FP32",
                                    "data": [0.0] * 100}], "outputs": [{"name": "nope"}]}),
    ("huge", {"inputs": [{"name": "latent", "shape": [1 << 40, 100, 1, 1], "datatype": "FP32", "data": []}]}),
]


@pytest.mark.parametrize("what,body", BAD, ids=[b[0] for b in BAD])
def test_errors_equal_a_single_process(server, dcgan_server, what, body):
    got, want = (httpx.post(u + INFER, json=body, timeout=60) for u in (server.url, dcgan_server.url))
    assert 400 <= got.status_code < 500 and got.status_code == want.status_code, (got.text, want.text)
    assert got.json() == want.json()
    assert httpx.post(server.url + "/v2/models/nope/infer", json=body, timeout=60).status_code == 404
    server.assert_alive()


def test_the_bad_body_corpus_gets_a_single_process_answers(server, dcgan_server):
    """Every hand-made bad body (bad_bodies.py): the same status and error body from a front end as
    from one process, and the device process still serves after them all."""
    with httpx.Client(base_url=server.url, timeout=60) as fe, httpx.Client(base_url=dcgan_server.url, timeout=60) as one:
        for bad in CORPUS:
            got, want = (c.post(bad.path, content=bad.body, headers=bad.headers) for c in (fe, one))
            assert got.status_code == want.status_code == bad.status, (bad.id, got.text)
            assert got.json() == want.json(), bad.id
        body, headers = binary_request(torch.randn(1, 100, 1, 1))
        assert fe.post(INFER, content=body, headers=headers).status_code == 200
    server.assert_alive()


def test_requests_batch_across_front_ends(server):
    gen = torch.Generator().manual_seed(5)
    bodies = [binary_request(torch.randn(1, 100, 1, 1, generator=gen)) for _ in range(24)]
    # one forward first, so that the batch histogram has its series whichever tests ran before
    assert httpx.post(server.url + INFER, content=bodies[0][0], headers=bodies[0][1], timeout=120).status_code == 200
    before = batch_histogram(server.url)

    async def spread(url):
        # The kernel hands a new connection to whichever front end accepts first, which may be the same one
        # every time: kept-alive connections are sorted by the front end that answered them, and the
        # requests sent on half from each.
        per_worker: dict[str, list[httpx.AsyncClient]] = {"0": [], "1": []}
        opened = []
        try:
            for _ in range(400):
                if all(len(v) >= len(bodies) // 2 for v in per_worker.values()):
                    break
                c = httpx.AsyncClient(base_url=url, timeout=120, limits=httpx.Limits(max_connections=1))
                opened.append(c)
                worker = (await c.get("/v2/health/live")).headers[WORKER]
                if len(per_worker[worker]) < len(bodies) // 2:
                    per_worker[worker].append(c)
            clients = [c for pair in zip(per_worker["0"], per_worker["1"]) for c in pair]
            assert len(clients) == len(bodies), {k: len(v) for k, v in per_worker.items()}
            return await asyncio.gather(*(c.post(INFER, content=b, headers=h) for c, (b, h) in zip(clients, bodies)))
        finally:
            for c in opened:
                await c.aclose()

    together = asyncio.run(spread(server.url))
    count, rows = (a - b for a, b in zip(batch_histogram(server.url), before))
    alone = [httpx.post(server.url + INFER, content=b, headers=h, timeout=120) for b, h in bodies]
    assert all(r.status_code == 200 for r in together + alone)
    assert rows == 24 and count < 24, (count, rows)
    assert {r.headers[WORKER] for r in together} == {"0", "1"}
    for t, a in zip(together, alone):
        assert_same_answer(t, a)


def test_metrics_hold_the_front_end_and_the_device_process(server):
    httpx.post(server.url + INFER, json=BAD[0][1], timeout=60)
    text = httpx.get(server.url + "/metrics", timeout=30).text
    for series in ("convt_requests_total", "convt_worker_info", "convt_frontend_requests_per_call_count",
                   "convt_batch_size_count", "convt_parity_passed",
                   "convt_inference_seconds_count", "convt_queue_depth", "convt_model_ready"):
        assert series in text, series
    types = re.findall(r"^# TYPE (\S+)", text, flags=re.M)
    assert len(types) == len(set(types)), "a metric family appears twice"
    assert 'workers="2"' in text


def test_health_reruns_parity_in_the_device_process(server):
    runs = [fresh(server.url, "/health") for _ in range(2)]
    for r in runs:
        assert r.status_code == 200 and r.json()["passed"], r.text
        assert r.json()["worker"]["count"] == 2 and r.json()["worker"]["ready"] == [True]
    assert runs[1].json()["run"] > runs[0].json()["run"]  # one device process counts every front end's runs


def test_the_deadline_holds_across_the_link(tmp_path_factory, tmp_path):
    slow = {"inputs": [{"name": "input__0", "shape": [1, 4, 5, 5], "datatype": "FP32",
                        "data": [3.0] + [0.0] * 98 + [4242.0]}]}  # slow_model: sleeps 3 s
    quick = {"inputs": [{"name": "input__0", "shape": [1, 4, 5, 5], "datatype": "FP32", "data": [0.0] * 100}]}
    with running_server(tmp_path_factory, "fe-deadline", "--frontends", "2", "--model",
                        "tests.service.slow_model:factory", "--request-timeout-s", "1") as s:
        r = httpx.post(s.url + "/v2/models/slow/infer", json=slow, timeout=60)
        assert r.status_code == 504 and "did not finish within 1 s" in r.json()["error"], r.text
        wait_for(lambda: httpx.post(s.url + "/v2/models/slow/infer", json=quick, timeout=60).status_code == 200,
                 30, "the next request served")


def _device_pid(logs: str) -> int:
    return int(re.search(r"device process \(pid (\d+)\)", logs).group(1))


def test_a_dead_device_process_stops_the_server(tmp_path_factory):
    with running_server(tmp_path_factory, "fe-dead", "--frontends", "2") as s:
        wait_for(lambda: fresh(s.url, "/v2/health/ready").status_code == 200, 300, "ready")
        device = _device_pid(s.logs())
        fronts = [r.json()["worker"]["pid"] for r in by_worker(s.url, "/health").values()]
        os.kill(device, signal.SIGKILL)
        assert s.process.wait(timeout=60) == EXIT_WORKER_DIED, s.logs()[-3000:]
        for pid in fronts:
            wait_for(lambda: not alive(pid), 30, f"front end pid {pid} to exit")
        assert f"(pid {device}) was killed by SIGKILL" in s.logs()
        stop_server(s.process)


def test_sigterm_waits_for_the_front_ends_then_stops_the_device_process(tmp_path_factory):
    with running_server(tmp_path_factory, "fe-term", "--frontends", "2") as s:
        wait_for(lambda: fresh(s.url, "/v2/health/ready").status_code == 200, 300, "ready")
        device = _device_pid(s.logs())
        s.process.send_signal(signal.SIGTERM)
        assert s.process.wait(timeout=60) == 0, s.logs()[-3000:]
        assert not alive(device)
        logs = s.logs()
        assert "every front end has closed its link: stopping" in logs
        assert "the link to the device process is lost" not in logs


@pytest.mark.skipif(DEVICE != "cpu", reason="auto resolves to the CUDA device there: the module's server covers it")
def test_device_auto_is_resolved_before_the_front_ends_start(tmp_path_factory):
    # the default --device auto: front ends must be given the device it resolves to, not "auto"
    with running_server(tmp_path_factory, "fe-auto", "--frontends", "2", "--device", "auto") as s:
        wait_for(lambda: fresh(s.url, "/v2/health/ready").status_code == 200, 300, "ready")
        assert httpx.get(s.url + "/v2/models/dcgan", timeout=30).json()["parameters"]["device"] == "cpu"


def test_frontends_refused_settings_and_start_up_failure():
    p = run_to_exit("--frontends", "2", "--workers", "2")
    assert p.returncode == EXIT_BAD_SETTINGS and "--frontends 2 feeds one device process" in p.stderr
    p = run_to_exit("--frontends", "0")
    assert p.returncode == EXIT_BAD_SETTINGS and "frontends: Input should be greater than or equal to 1" in p.stderr
    p = run_to_exit("--frontends", "2", "--model", "no-such-model")
    out = p.stdout + p.stderr
    assert p.returncode == EXIT_STARTUP_FAILED, out[-3000:]
    assert "the device process did not start: unknown model 'no-such-model'" in out
