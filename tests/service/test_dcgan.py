"""The default model (dcgan) over the v2 protocol: metadata, JSON and binary
inference against the model run locally, /health and /metrics."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
import time

import httpx
import numpy as np
import pytest
import torch

import models

from .conftest import DEVICE, REL_TOL, rel_error

INFER = "/v2/models/dcgan/infer"
HEADER = "Inference-Header-Content-Length"


@pytest.fixture(scope="module")
def client(dcgan_server):
    with dcgan_server.client() as c:
        yield c


@pytest.fixture(scope="module")
def reference():
    """The same seeded model, built here, on torch's own ConvTranspose2d."""
    module = models.load_model("dcgan").module.eval()
    return lambda x: module(x).detach()


def latent(n: int, seed: int) -> torch.Tensor:
    return torch.randn(n, 100, 1, 1, generator=torch.Generator().manual_seed(seed))


def json_request(x: torch.Tensor, nested: bool = False, **extra) -> dict:
    data = x.tolist() if nested else x.flatten().tolist()
    return {"inputs": [{"name": "latent", "shape": list(x.shape), "datatype": "FP32", "data": data}], **extra}


def binary_body(x: torch.Tensor, **extra) -> tuple[bytes, dict]:
    raw = x.numpy().astype("<f4").tobytes()
    header = json.dumps({"inputs": [{"name": "latent", "shape": list(x.shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(raw)}}], **extra}).encode()
    return header + raw, {HEADER: str(len(header)), "Content-Type": "application/octet-stream"}


def split_binary_response(r: httpx.Response) -> tuple[dict, bytes]:
    n = int(r.headers[HEADER])
    return json.loads(r.content[:n]), r.content[n:]


def json_output(r: httpx.Response) -> torch.Tensor:
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    return torch.tensor(out["data"], dtype=torch.float32).reshape(out["shape"])


def test_server_metadata(client):
    r = client.get("/v2")
    assert r.status_code == 200
    body = r.json()
    assert body["name"] == "convt-serve" and body["version"]
    assert "binary_tensor_data" in body["extensions"]


def test_live_and_ready(client):
    assert client.get("/v2/health/live").json() == {"live": True}
    r = client.get("/v2/health/ready")
    assert (r.status_code, r.json()) == (200, {"ready": True})
    for path in ("/v2/models/dcgan/ready", "/v2/models/dcgan/versions/1/ready"):
        r = client.get(path)
        assert (r.status_code, r.json()) == (200, {"name": "dcgan", "ready": True})


def test_model_metadata(client):
    r = client.get("/v2/models/dcgan")
    assert r.status_code == 200
    meta = r.json()
    assert meta["name"] == "dcgan" and meta["versions"] == ["1"] and meta["platform"] == "pytorch"
    assert meta["inputs"] == [{"name": "latent", "datatype": "FP32", "shape": [-1, 100, 1, 1]}]
    assert meta["outputs"] == [{"name": "image", "datatype": "FP32", "shape": [-1, 3, 64, 64]}]
    # no weights file: the metadata says the parameters come from a fixed seed
    assert meta["parameters"]["weights"]["source"] == "seed"
    assert meta["parameters"]["weights"]["seed"] == models.INIT_SEED
    assert meta["parameters"]["layers_on_convt_kernel"] == ["main.0", "main.3", "main.6", "main.9", "main.12"]
    assert client.get("/v2/models/dcgan/versions/1").json() == meta


def test_json_inference_equals_local_model(client, reference):
    x = latent(3, seed=1)
    r = client.post(INFER, json=json_request(x, id="req-42"))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["model_name"] == "dcgan" and body["model_version"] == "1" and body["id"] == "req-42"
    out = body["outputs"][0]
    assert (out["name"], out["datatype"], out["shape"]) == ("image", "FP32", [3, 3, 64, 64])
    got = torch.tensor(out["data"], dtype=torch.float32).reshape(out["shape"])
    want = reference(x)
    assert rel_error(got, want) < REL_TOL
    assert got.abs().max() > 0  # a model of zeros would match nothing above, but make it explicit


def test_nested_data_and_versioned_path_give_the_same_answer(client):
    x = latent(2, seed=2)
    flat = json_output(client.post(INFER, json=json_request(x)))
    nested = json_output(client.post(INFER, json=json_request(x, nested=True)))
    versioned = json_output(client.post("/v2/models/dcgan/versions/1/infer", json=json_request(x)))
    assert torch.equal(flat, nested) and torch.equal(flat, versioned)


def test_binary_inference_round_trips_exactly(client, reference):
    x = latent(4, seed=3)
    via_json = json_output(client.post(INFER, json=json_request(x)))
    body, headers = binary_body(x, parameters={"binary_data_output": True}, id="bin-1")
    r = client.post(INFER, content=body, headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/octet-stream"
    header, raw = split_binary_response(r)
    assert header["id"] == "bin-1" and header["model_name"] == "dcgan"
    (out,) = header["outputs"]
    assert out["shape"] == [4, 3, 64, 64] and out["datatype"] == "FP32" and "data" not in out
    assert out["parameters"]["binary_data_size"] == len(raw) == 4 * 3 * 64 * 64 * 4
    got = torch.from_numpy(np.frombuffer(raw, dtype="<f4").reshape(out["shape"]).copy())
    # bit for bit: binary in and out carry exactly the values JSON carries
    assert torch.equal(got, via_json)
    assert rel_error(got, reference(x)) < REL_TOL


def test_binary_output_per_output_and_override(client):
    x = latent(1, seed=4)
    want = json_output(client.post(INFER, json=json_request(x)))
    per_output = json_request(x, outputs=[{"name": "image", "parameters": {"binary_data": True}}])
    r = client.post(INFER, json=per_output)
    header, raw = split_binary_response(r)
    assert header["outputs"][0]["parameters"]["binary_data_size"] == len(raw)
    assert torch.equal(torch.from_numpy(np.frombuffer(raw, dtype="<f4").copy()).reshape(want.shape), want)
    # an output's own binary_data=false wins over the request's binary_data_output
    body, headers = binary_body(x, parameters={"binary_data_output": True},
                                outputs=[{"name": "image", "parameters": {"binary_data": False}}])
    r = client.post(INFER, content=body, headers=headers)
    assert HEADER not in r.headers and r.headers["content-type"].startswith("application/json")
    assert torch.equal(json_output(r), want)


def test_gzip_request_body(client):
    x = latent(2, seed=5)
    want = json_output(client.post(INFER, json=json_request(x)))
    r = client.post(INFER, content=gzip.compress(json.dumps(json_request(x)).encode()),
                    headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
    assert torch.equal(json_output(r), want)


def check_report(report: dict) -> None:
    assert report["passed"] is True and report["status"] == "pass" and report["failed"] == []
    assert report["model_name"] == "dcgan" and report["device"].startswith(DEVICE) and report["dtype"] == "float32"
    assert [layer["name"] for layer in report["layers"]] == ["main.0", "main.3", "main.6", "main.9", "main.12"]
    for layer in report["layers"]:
        assert layer["passed"] and layer["input_source"] == "example"
        assert 0 <= layer["rel_error"] <= layer["tolerance"] and layer["max_abs_error"] >= 0
        assert {"in_channels", "out_channels", "kernel_size", "stride", "padding"} <= set(layer["config"])
    assert report["model"]["passed"] and report["model"]["name"] == "<model>"
    assert "cpu" in report["kernel"]["backends"] and report["kernel"]["torch"] == torch.__version__
    assert report["seconds"] > 0


def test_health_passes_with_a_per_layer_report(client):
    first = client.get("/health")
    assert first.status_code == 200, first.text
    check_report(first.json())
    second = client.get("/health").json()
    check_report(second)
    assert second["run"] > first.json()["run"]
    # fresh random inputs each run: the measured errors change
    errors = lambda rep: [layer["max_abs_error"] for layer in rep["layers"]]  # noqa: E731
    assert errors(first.json()) != errors(second)


def parity_runs(client) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith('convt_parity_runs_total{model="dcgan"}'):
            return float(line.split()[-1])
    raise AssertionError("convt_parity_runs_total missing from /metrics")


def test_concurrent_health_callers_share_one_run(dcgan_server, client):
    before = parity_runs(client)

    async def burst():
        async with httpx.AsyncClient(base_url=dcgan_server.url, timeout=120) as ac:
            return await asyncio.gather(*(ac.get("/health") for _ in range(8)))

    responses = asyncio.run(burst())
    assert all(r.status_code == 200 for r in responses)
    runs = {r.json()["run"] for r in responses}
    assert len(runs) < 8  # callers that overlapped got the same run
    assert parity_runs(client) - before == len(runs)


def test_liveness_does_not_wait_for_health(dcgan_server, client):
    done = threading.Event()
    started = time.perf_counter()
    health_seconds = []

    def health():
        with dcgan_server.client() as c:
            c.get("/health")
        health_seconds.append(time.perf_counter() - started)
        done.set()

    t = threading.Thread(target=health)
    t.start()
    live_latencies = []
    while not done.is_set():
        t0 = time.perf_counter()
        r = client.get("/v2/health/live")
        if not done.is_set():  # answered while the check was in flight
            live_latencies.append(time.perf_counter() - t0)
        assert r.status_code == 200
    t.join()
    if health_seconds[0] < 0.2:
        pytest.skip(f"/health took {health_seconds[0]:.3f} s: too fast to observe liveness during it")
    assert live_latencies, "no liveness call completed while /health was in flight"
    assert max(live_latencies) < health_seconds[0] / 2


def test_metrics(client):
    client.post(INFER, json=json_request(latent(1, seed=6)))
    client.post("/v2/models/nope/infer", json={})
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'convt_requests_total{endpoint="/v2/models/{name}/infer",method="POST",status="200"}' in text
    assert 'convt_requests_total{endpoint="/v2/models/{name}/infer",method="POST",status="404"}' in text
    assert 'convt_request_duration_seconds_bucket{endpoint="/v2/models/{name}/infer"' in text
    assert 'convt_inference_seconds_count{model="dcgan"}' in text
    assert 'convt_parity_passed{model="dcgan"} 1.0' in text
    assert 'convt_parity_rel_error{layer="main.6",model="dcgan"}' in text
    assert 'convt_model_ready{model="dcgan"} 1.0' in text
