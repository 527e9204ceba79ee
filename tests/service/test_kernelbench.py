"""A KernelBench model (problem 81: stride 5, dilation 2) served with a weights
file: batch and spatial size from the request, answers equal to the model run
locally with the same weights."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import models

from .conftest import REL_TOL, rel_error, running_server

NAME = "kernelbench-81"
INFER = f"/v2/models/{NAME}/infer"
HEADER = "Inference-Header-Content-Length"


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """Weights unlike the seeded ones, so the test proves the file was loaded."""
    module = models.load_model(NAME).module
    g = torch.Generator().manual_seed(1234)
    state = {k: torch.randn(v.shape, generator=g) for k, v in module.state_dict().items()}
    path = tmp_path_factory.mktemp("weights") / "kb81.safetensors"
    save_file(state, str(path))
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory, weights):
    with running_server(tmp_path_factory, "kb81", "--model", NAME, "--weights", str(weights)) as s:
        yield s



@pytest.fixture(scope="module")
def reference(weights):
    module = models.load_model(NAME, weights=weights).module.eval()
    return lambda x: module(x).detach()


def infer_json(client, x: torch.Tensor) -> dict:
    r = client.post(INFER, json={"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                                             "data": x.flatten().tolist()}]})
    assert r.status_code == 200, r.text
    return r.json()["outputs"][0]


def test_ready_and_metadata(client, weights):
    assert client.get("/v2/health/ready").status_code == 200
    meta = client.get(f"/v2/models/{NAME}").json()
    assert meta["inputs"] == [{"name": "input", "datatype": "FP32", "shape": [-1, 32, -1, -1]}]
    assert meta["outputs"] == [{"name": "output", "datatype": "FP32", "shape": [-1, 64, -1, -1]}]
    w = meta["parameters"]["weights"]
    assert w["source"] == "file" and w["format"] == "safetensors"
    assert w["sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()


@pytest.mark.parametrize("shape", [(2, 32, 5, 7), (1, 32, 9, 4), (3, 32, 1, 1)])
def test_json_inference_equals_local_model(client, reference, shape):
    x = torch.rand(shape, generator=torch.Generator().manual_seed(sum(shape)))
    out = infer_json(client, x)
    want = reference(x)
    # (H - 1) * 5 - 2 + 2 * 2 + 1 per spatial axis
    assert out["shape"] == [shape[0], 64, 5 * shape[2] - 2, 5 * shape[3] - 2] == list(want.shape)
    assert rel_error(torch.tensor(out["data"]).reshape(out["shape"]), want) < REL_TOL


# the second output is 1.5 MB: the server writes it as a view of the tensor, not joined to the header
@pytest.mark.parametrize("shape", [(2, 32, 6, 3), (1, 32, 16, 16)])
def test_binary_round_trip_exact(client, shape):
    x = torch.rand(shape, generator=torch.Generator().manual_seed(7))
    via_json = torch.tensor(infer_json(client, x)["data"], dtype=torch.float32)
    raw = x.numpy().astype("<f4").tobytes()
    header = json.dumps({"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(raw)}}],
                         "outputs": [{"name": "output", "parameters": {"binary_data": True}}]}).encode()
    r = client.post(INFER, content=header + raw, headers={HEADER: str(len(header))})
    assert r.status_code == 200, r.text
    n = int(r.headers[HEADER])
    out = json.loads(r.content[:n])["outputs"][0]
    assert out["shape"] == [shape[0], 64, 5 * shape[2] - 2, 5 * shape[3] - 2]
    assert len(r.content) == n + out["parameters"]["binary_data_size"] == int(r.headers["content-length"])
    got = torch.from_numpy(np.frombuffer(r.content[n:], dtype="<f4").copy())
    assert torch.equal(got, via_json)


def test_shape_that_does_not_fit(server, client):
    r = client.post(INFER, json={"inputs": [{"name": "input", "shape": [1, 31, 4, 4], "datatype": "FP32",
                                             "data": [0.0] * 31 * 16}]})
    assert r.status_code == 400
    assert "expects [-1, 32, -1, -1]" in r.json()["error"]
    server.assert_alive()


def test_enormous_spatial_size_refused_before_allocation(server, client):
    # 1 x 32 x 400000 x 400000 declared with 4 bytes of data: refused on the shape alone
    header = json.dumps({"inputs": [{"name": "input", "shape": [1, 32, 400_000, 400_000], "datatype": "FP32",
                                     "parameters": {"binary_data_size": 4}}]}).encode()
    r = client.post(INFER, content=header + b"\x00" * 4, headers={HEADER: str(len(header))})
    assert r.status_code == 400
    assert "5120000000000 elements" in r.json()["error"] and "--max-tensor-elements" in r.json()["error"]
    server.assert_alive()


def test_health_reports_the_single_layer(client):
    r = client.get("/health")
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["passed"] and report["model_name"] == NAME and report["weights"]["source"] == "file"
    (layer,) = report["layers"]
    assert layer["name"] == "conv_transpose2d" and layer["passed"]
    assert layer["config"]["stride"] == [5, 5] and layer["config"]["dilation"] == [2, 2]
    assert layer["input_shape"][1] == 32 and layer["input_source"] == "example"
