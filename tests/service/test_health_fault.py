"""When our kernel disagrees with PyTorch on one layer, the server stays up, is
not ready, and /health answers 503 naming that layer.

The fault is injected by tests/service/faulty_model.py, served as a user model.
"""

from __future__ import annotations

import pytest

from .conftest import running_server

# faulty_model.FAULTY_LAYER, restated: importing that module would override our
# kernel in this (the test runner's) process too, for every test after this one.
FAULTY_LAYER = "main.6"

NAME = "dcgan-faulty"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory, "faulty", "--model", "tests.service.faulty_model:factory") as s:
        yield s



def test_up_but_not_ready(server, client):
    assert client.get("/v2/health/live").status_code == 200
    r = client.get("/v2/health/ready")
    assert (r.status_code, r.json()) == (503, {"ready": False})
    r = client.get(f"/v2/models/{NAME}/ready")
    assert (r.status_code, r.json()) == (503, {"name": NAME, "ready": False})


def test_start_up_logged_the_per_layer_report(server):
    logs = server.logs()
    assert f"FAILED ({FAULTY_LAYER}, <model>)" in logs
    failing = [line for line in logs.splitlines() if " FAIL " in line]
    assert any(FAULTY_LAYER in line for line in failing)
    assert not any("main.3" in line for line in failing)
    assert "is NOT ready" in logs


def test_health_answers_503_and_names_the_layer(server, client):
    r = client.get("/health")
    assert r.status_code == 503
    report = r.json()
    assert report["passed"] is False and report["status"] == "fail"
    assert report["failed"] == [FAULTY_LAYER, "<model>"]
    layers = {layer["name"]: layer for layer in report["layers"]}
    assert not layers[FAULTY_LAYER]["passed"]
    assert layers[FAULTY_LAYER]["rel_error"] > layers[FAULTY_LAYER]["tolerance"]
    assert all(layer["passed"] for name, layer in layers.items() if name != FAULTY_LAYER)
    assert report["model"]["passed"] is False
    server.assert_alive()


def test_readiness_stays_false_and_inference_is_refused(server, client):
    client.get("/health")
    assert client.get("/v2/health/ready").status_code == 503
    r = client.post(f"/v2/models/{NAME}/infer", json={"inputs": [{"name": "latent", "shape": [1, 100, 1, 1],
                                                                  "datatype": "FP32", "data": [0.0] * 100}]})
    assert r.status_code == 503
    assert "not ready" in r.json()["error"] and "/health" in r.json()["error"]
    assert f'convt_parity_passed{{model="{NAME}"}} 0.0' in client.get("/metrics").text
    server.assert_alive()
