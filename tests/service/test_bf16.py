"""A model served in bf16 (KernelBench 75: strided, dilated, grouped): the
datatype is BF16 end to end, FP32 inputs are refused, parity holds."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import models

from .conftest import rel_error, running_server

NAME = "kernelbench-75"
INFER = f"/v2/models/{NAME}/infer"
HEADER = "Inference-Header-Content-Length"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory, "bf16", "--model", NAME, "--dtype", "bf16") as s:
        yield s



def test_metadata_says_bf16(client):
    meta = client.get(f"/v2/models/{NAME}").json()
    assert meta["inputs"][0]["datatype"] == "BF16" and meta["outputs"][0]["datatype"] == "BF16"


def test_fp32_input_refused(server, client):
    r = client.post(INFER, json={"inputs": [{"name": "input", "shape": [1, 32, 2, 2], "datatype": "FP32",
                                             "data": [0.0] * 128}]})
    assert r.status_code == 400
    assert "takes BF16" in r.json()["error"]
    server.assert_alive()


def test_bf16_binary_and_json_inference(client):
    x = torch.rand(2, 32, 4, 5, generator=torch.Generator().manual_seed(75)).to(torch.bfloat16)
    raw = x.view(torch.int16).numpy().astype("<i2").tobytes()
    header = json.dumps({"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "BF16",
                                     "parameters": {"binary_data_size": len(raw)}}],
                         "parameters": {"binary_data_output": True}}).encode()
    r = client.post(INFER, content=header + raw, headers={HEADER: str(len(header))})
    assert r.status_code == 200, r.text
    n = int(r.headers[HEADER])
    out = json.loads(r.content[:n])["outputs"][0]
    assert out["datatype"] == "BF16" and out["parameters"]["binary_data_size"] == 2 * np.prod(out["shape"])
    got = torch.from_numpy(np.frombuffer(r.content[n:], dtype="<i2").copy()).view(torch.bfloat16).reshape(out["shape"])
    # reference in float32 from the same bf16-rounded weights and input
    module = models.load_model(NAME).module.to(torch.bfloat16).float().eval()
    want = module(x.float()).detach()
    assert list(want.shape) == out["shape"]
    assert rel_error(got.float(), want) < 2e-2
    # JSON data for BF16 is plain numbers; the answer is the same tensor
    r = client.post(INFER, json={"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "BF16",
                                             "data": x.float().flatten().tolist()}]})
    assert r.status_code == 200, r.text
    assert torch.equal(torch.tensor(r.json()["outputs"][0]["data"]).reshape(out["shape"]), got.float())


def test_health_in_bf16(client):
    r = client.get("/health")
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["dtype"] == "bfloat16" and report["precision"] == "bfloat16"
    assert report["layers"][0]["config"]["groups"] == 4
