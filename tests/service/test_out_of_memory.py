"""A device out-of-memory answers 503, and the server recovers and keeps serving."""

from __future__ import annotations

import pytest

from .conftest import running_server

INFER = "/v2/models/hungry/infer"


def request(batch: int) -> dict:
    return {"inputs": [{"name": "input__0", "shape": [batch, 4, 5, 5], "datatype": "FP32", "data": [0.5] * batch * 100}]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory, "hungry", "--model", "tests.service.hungry_model:factory") as s:
        yield s


def test_out_of_memory_is_503_and_the_server_recovers(server):
    with server.client() as client:
        ok = client.post(INFER, json=request(2))
        assert ok.status_code == 200, ok.text
        for _ in range(3):
            r = client.post(INFER, json=request(1000))
            assert r.status_code == 503, r.text
            assert "ran out of memory" in r.json()["error"] and "smaller batch" in r.json()["error"]
            server.assert_alive()
        again = client.post(INFER, json=request(2))
        assert again.status_code == 200 and again.json() == ok.json()
        assert client.get("/v2/health/ready").status_code == 200
