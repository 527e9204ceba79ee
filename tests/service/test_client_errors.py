"""Every client error gets its status and a JSON message saying what was wrong
and what was expected; the server answers normally after each."""

from __future__ import annotations

import gzip
import json
import time
import zlib

import pytest

INFER = "/v2/models/dcgan/infer"
HEADER = "Inference-Header-Content-Length"
LIMIT = 4_000_000  # the dcgan_server fixture's --max-request-bytes


def inp(**over) -> dict:
    return {"name": "latent", "shape": [1, 100, 1, 1], "datatype": "FP32", "data": [0.5] * 100, **over}


def req(*inputs, **extra) -> bytes:
    return json.dumps({"inputs": list(inputs) or [inp()], **extra}).encode()


def binary(raw: bytes, size: int | None = None, header_length: int | str | None = None, shape=(1, 100, 1, 1)):
    header = json.dumps({"inputs": [{"name": "latent", "shape": list(shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(raw) if size is None else size}}]}).encode()
    return header + raw, {HEADER: str(len(header) if header_length is None else header_length)}


F32 = b"\x00\x00\x80\x3f"  # 1.0f

# (id, method, path, body, headers, status, fragments of the message)
CASES = [
    ("malformed-json", "POST", INFER, b'{"inputs": [', {}, 400, ["malformed inference request", "JSON"]),
    ("not-an-object", "POST", INFER, b"[1, 2]", {}, 400, ["malformed inference request", "expected"]),
    ("no-inputs-field", "POST", INFER, b"{}", {}, 400, ["inputs", "Field required"]),
    ("empty-inputs", "POST", INFER, b'{"inputs": []}', {}, 400, ["inputs", "at least 1"]),
    ("unknown-model", "POST", "/v2/models/nope/infer", req(), {}, 404, ["unknown model 'nope'", "dcgan"]),
    ("unknown-version", "POST", "/v2/models/dcgan/versions/2/infer", req(), {}, 404, ["no version '2'", "'1'"]),
    ("unknown-model-metadata", "GET", "/v2/models/nope", None, {}, 404, ["unknown model 'nope'"]),
    ("unknown-version-metadata", "GET", "/v2/models/dcgan/versions/7", None, {}, 404, ["no version '7'"]),
    ("unknown-model-ready", "GET", "/v2/models/nope/ready", None, {}, 404, ["unknown model 'nope'"]),
    ("unknown-input", "POST", INFER, req(inp(name="z")), {}, 400, ["unknown input 'z'", "['latent']"]),
    ("input-without-name", "POST", INFER, req({"shape": [1, 100, 1, 1], "datatype": "FP32", "data": [0] * 100}),
     {}, 400, ["inputs.0.name", "Field required"]),
    ("duplicate-input", "POST", INFER, req(inp(), inp()), {}, 400, ["'latent' appears more than once"]),
    ("wrong-datatype", "POST", INFER, req(inp(datatype="FP64")), {}, 400, ["datatype 'FP64'", "takes FP32"]),
    ("bogus-datatype", "POST", INFER, req(inp(datatype="FLOAT")), {}, 400, ["datatype 'FLOAT'", "takes FP32"]),
    ("wrong-channels", "POST", INFER, req(inp(shape=[1, 99, 1, 1], data=[0] * 99)), {}, 400,
     ["shape [1, 99, 1, 1]", "expects [-1, 100, 1, 1]"]),
    ("wrong-rank", "POST", INFER, req(inp(shape=[100])), {}, 400, ["shape [100]", "expects [-1, 100, 1, 1]"]),
    ("zero-batch", "POST", INFER, req(inp(shape=[0, 100, 1, 1], data=[])), {}, 400, ["must be >= 1"]),
    ("negative-dim", "POST", INFER, req(inp(shape=[-3, 100, 1, 1])), {}, 400, ["must be >= 1"]),
    ("shape-of-strings", "POST", INFER, req(inp(shape=["1", 100, 1, 1])), {}, 400, ["inputs.0.shape.0", "integer"]),
    ("too-few-values", "POST", INFER, req(inp(data=[0.5] * 99)), {}, 400, ["data has 99 values", "needs 100"]),
    ("too-many-values", "POST", INFER, req(inp(data=[0.5] * 101)), {}, 400, ["data has 101 values", "needs 100"]),
    ("ragged-nested-data", "POST", INFER, req(inp(data=[[[[0.5]]] * 99 + [[[0.5, 0.5]]]])), {}, 400,
     ["not a regular nested list"]),
    ("string-data", "POST", INFER, req(inp(data=["0.5"] * 100)), {}, 400, ["strings", "FP32 data must be numbers"]),
    ("bool-data", "POST", INFER, req(inp(data=[True] * 100)), {}, 400, ["booleans", "must be numbers"]),
    ("no-data", "POST", INFER, req({k: v for k, v in inp().items() if k != "data"}), {}, 400,
     ["has no data", "binary_data_size"]),
    ("scalar-data", "POST", INFER, req(inp(data=0.5)), {}, 400, ["data must be a list"]),
    ("deeply-nested-data", "POST", INFER,
     b'{"inputs": [{"name": "latent", "shape": [1, 100, 1, 1], "datatype": "FP32", "data": ' + b"[" * 100_000 +
     b"]" * 100_000 + b"}]}", {}, 400, ["malformed inference request"]),
    ("id-not-a-string", "POST", INFER, req(id=123), {}, 400, ["id", "string"]),
    ("binary-size-does-not-match-shape", "POST", INFER, *binary(F32 * 99), 400,
     ["binary_data_size is 396 bytes", "needs 100 x 4 = 400 bytes"]),
    ("binary-size-past-body", "POST", INFER, *binary(F32 * 10, size=400), 400, ["runs past the end of the body"]),
    ("binary-bytes-left-over", "POST", INFER, *binary(F32 * 100 + b"\x00" * 8, size=400), 400,
     ["8 bytes after the binary inputs"]),
    ("binary-size-not-an-int", "POST", INFER, *binary(F32 * 100, size="400"), 400,
     ["binary_data_size must be a non-negative integer"]),
    ("binary-and-data", "POST", INFER, req(inp(parameters={"binary_data_size": 400})), {}, 400,
     ["both data and binary_data_size"]),
    ("header-length-not-int", "POST", INFER, *binary(F32 * 100, header_length="abc"), 400,
     [HEADER, "non-negative integer"]),
    ("header-length-past-body", "POST", INFER, *binary(F32 * 100, header_length=10**6), 400,
     [HEADER, "is 1000000 but the body is"]),
    ("header-length-cuts-json", "POST", INFER, *binary(F32 * 100, header_length=20), 400,
     ["malformed inference request"]),
    ("enormous-declared-shape", "POST", INFER, *binary(F32 * 100, shape=(10**12, 100, 1, 1)), 400,
     ["100000000000000 elements", "--max-tensor-elements"]),
    ("enormous-declared-shape-json", "POST", INFER, req(inp(shape=[2**62, 100, 1, 1])), {}, 400,
     ["the limit is 67108864 elements", "--max-tensor-elements"]),
    ("output-over-limit", "POST", INFER, req(inp(shape=[2**19, 100, 1, 1])), {}, 400,
     ["would be 25769803776 bytes", "--max-output-bytes"]),
    ("unknown-output", "POST", INFER, req(outputs=[{"name": "mask"}]), {}, 400,
     ["unknown output 'mask'", "['image']"]),
    ("binary-data-not-bool", "POST", INFER, req(outputs=[{"name": "image", "parameters": {"binary_data": "yes"}}]),
     {}, 400, ["binary_data must be true or false"]),
    ("binary-data-output-not-bool", "POST", INFER, req(parameters={"binary_data_output": 1}), {}, 400,
     ["binary_data_output must be true or false"]),
    ("classification-not-supported", "POST", INFER,
     req(outputs=[{"name": "image", "parameters": {"classification": 3}}]), {}, 400, ["classification extension"]),
    ("shared-memory-not-supported", "POST", INFER,
     req(inp(parameters={"shared_memory_region": "r0"})), {}, 400, ["shared-memory extension"]),
    ("body-over-limit", "POST", INFER, b" " * (LIMIT + 1), {}, 413, [f"the limit is {LIMIT} bytes"]),
    ("unknown-content-encoding", "POST", INFER, req(), {"Content-Encoding": "br"}, 415, ["'br' is not supported"]),
    ("corrupt-gzip", "POST", INFER, b"\x1f\x8bnot gzip at all", {"Content-Encoding": "gzip"}, 400,
     ["not valid gzip"]),
    ("gzip-bomb", "POST", INFER, gzip.compress(b" " * (LIMIT + 1000)), {"Content-Encoding": "gzip"}, 413,
     ["inflated request body", f"the limit is {LIMIT} bytes"]),
    ("truncated-deflate", "POST", INFER, zlib.compress(req())[:-10], {"Content-Encoding": "deflate"}, 400,
     ["truncated deflate"]),
    ("wrong-method", "GET", INFER, None, {}, 405, ["method GET is not allowed"]),
    ("unknown-path", "GET", "/v3/whatever", None, {}, 404, ["no endpoint GET /v3/whatever"]),
]


@pytest.fixture(scope="module")
def client(dcgan_server):
    with dcgan_server.client() as c:
        yield c


@pytest.mark.parametrize("method,path,body,headers,status,fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_client_error(dcgan_server, client, method, path, body, headers, status, fragments):
    t0 = time.perf_counter()
    r = client.request(method, path, content=body, headers=headers)
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"}, body
    for fragment in fragments:
        assert fragment in body["error"], (fragment, body["error"])
    assert time.perf_counter() - t0 < 30  # refused up front, not after computing anything large
    dcgan_server.assert_alive()


def test_still_serves_after_every_error(dcgan_server, client):
    r = client.post(INFER, content=req())
    assert r.status_code == 200 and r.json()["outputs"][0]["shape"] == [1, 3, 64, 64]
    assert client.get("/v2/health/ready").status_code == 200
    # nothing a client sent reached the generic 500 handler
    assert "unhandled error" not in dcgan_server.logs()
    assert ',status="500"}' not in client.get("/metrics").text
