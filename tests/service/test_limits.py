"""--max-tensor-elements and --request-timeout-s on a real server (the slow
test-only model: its forward sleeps as long as a request asks)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from .conftest import running_server

INFER = "/v2/models/slow/infer"
SLOW_MARK = 4242.0  # slow_model.SLOW_MARK: test models are loaded by the server only, never imported here
TIMEOUT = 4  # the server's --request-timeout-s
SLEEP = 3 * TIMEOUT  # a forward that certainly outlives the timeout
WAIT = 120  # generous bound on waiting for the slow forwards to end


def request(batch: int = 1, seconds: float = 0.0) -> dict:
    data = [0.0] * batch * 100
    if seconds:
        data[0], data[-1] = seconds, SLOW_MARK
    return {"inputs": [{"name": "input__0", "shape": [batch, 4, 5, 5], "datatype": "FP32", "data": data}]}


@pytest.fixture(scope="module")
def slow_log(tmp_path_factory):
    return tmp_path_factory.mktemp("slow") / "forwards.log"


@pytest.fixture(scope="module")
def server(tmp_path_factory, slow_log):
    with running_server(tmp_path_factory, "limits", "--model", "tests.service.slow_model:factory",
                        "--max-tensor-elements", "1000", "--request-timeout-s", str(TIMEOUT),
                        env={"CONVT_TEST_SLOW_LOG": str(slow_log)}) as s:
        yield s


def forwards(slow_log) -> list[str]:
    return slow_log.read_text().splitlines() if slow_log.exists() else []


def wait_for_end(slow_log, seconds: float) -> None:
    deadline = time.monotonic() + WAIT
    while f"end {seconds:g}" not in forwards(slow_log):
        assert time.monotonic() < deadline, f"the {seconds} s forward never ended: {forwards(slow_log)}"
        time.sleep(0.1)


def test_tensor_of_the_limit_is_served(client):
    r = client.post(INFER, json=request(batch=10))  # 10 x 4 x 5 x 5 = 1000 elements
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("binary", [False, True])
def test_tensor_over_the_limit_is_refused(client, binary):
    if binary:
        header = json.dumps({"inputs": [{"name": "input__0", "shape": [11, 4, 5, 5], "datatype": "FP32",
                                         "parameters": {"binary_data_size": 4400}}]}).encode()
        r = client.post(INFER, content=header + bytes(4400),
                        headers={"Inference-Header-Content-Length": str(len(header))})
    else:
        r = client.post(INFER, json=request(batch=11))
    assert r.status_code == 400, r.text
    assert r.json() == {"error": "input 'input__0' declares shape [11, 4, 5, 5], 1100 elements; the limit is 1000 "
                                 "elements per tensor (--max-tensor-elements / CONVT_MAX_TENSOR_ELEMENTS)"}


def test_slow_inference_is_504_and_the_server_keeps_serving(server, client, slow_log):
    r = client.post(INFER, json=request(seconds=SLEEP))
    assert r.status_code == 504, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert "did not finish within 4 s" in r.json()["error"] and "--request-timeout-s" in r.json()["error"]
    server.assert_alive()
    wait_for_end(slow_log, SLEEP)  # the forward runs on; the next request waits for the device behind it
    r = client.post(INFER, json=request())
    assert r.status_code == 200, r.text
    assert client.get("/v2/health/ready").status_code == 200


def test_a_request_that_times_out_in_the_queue_never_runs(server, slow_log):
    # one forward holds the device past the timeout; the request queued behind it
    # times out too, and must not run later, when its client is long gone
    running, queued = SLEEP + 0.5, SLEEP + 1  # told apart in the log from the other tests' forwards
    with ThreadPoolExecutor(2) as pool, server.client() as a, server.client() as b:
        first = pool.submit(a.post, INFER, json=request(seconds=running))
        deadline = time.monotonic() + WAIT
        while f"start {running:g}" not in forwards(slow_log):
            assert time.monotonic() < deadline, "the first request never reached the model"
            time.sleep(0.05)
        second = pool.submit(b.post, INFER, json=request(seconds=queued))
        assert first.result().status_code == 504 and second.result().status_code == 504
    wait_for_end(slow_log, running)
    with server.client() as c:
        assert c.post(INFER, json=request()).status_code == 200  # ran after the slot the second one had
    assert f"start {queued:g}" not in forwards(slow_log)
