"""Schema-driven fuzzing: schemathesis reads the running server's /openapi.json
(the infer routes state the v2 InferenceRequest body: service/openapi.py) and
sends generated requests, schema-conforming and schema-violating, to every
operation. None may be a 5xx; every 4xx is a JSON ``{"error": ...}``; and the
server serves a real inference afterwards."""

from __future__ import annotations

import re

import pytest

schemathesis = pytest.importorskip("schemathesis")  # a test extra; absent on the bare GPU machine
from hypothesis import HealthCheck, given, settings  # noqa: E402  (schemathesis brings hypothesis)

EXAMPLES = 60  # per operation and generation mode: enough to reach the codec's checks, and quick on 2 cores


@pytest.fixture(scope="module")
def api_schema(dcgan_server):
    return schemathesis.openapi.from_url(f"{dcgan_server.url}/openapi.json")


def operations(api_schema) -> dict[str, "schemathesis.APIOperation"]:
    # /health reruns the whole parity check: fuzzing it would only measure the CPU
    ops = [result.ok() for result in api_schema.get_all_operations()]
    return {op.label: op for op in ops if op.path != "/health"}


def test_the_infer_routes_document_the_request_body(api_schema):
    paths = api_schema.raw_schema["paths"]
    for path in ("/v2/models/{name}/infer", "/v2/models/{name}/versions/{model_version}/infer"):
        body = paths[path]["post"]["requestBody"]["content"]
        assert body["application/json"]["schema"]["required"] == ["inputs"]
        assert set(body["application/json"]["schema"]["properties"]) == {"id", "parameters", "inputs", "outputs"}
        assert "application/octet-stream" in body


def check(case) -> None:
    response = case.call(timeout=60)
    assert response.status_code < 500, (case.as_curl_command(), response.status_code, response.text[:500])
    if response.status_code >= 400:
        content_type = {k.lower(): v for k, v in response.headers.items()}.get("content-type", [""])
        assert content_type[0].startswith("application/json"), response.headers
        body = response.json()
        assert set(body) == {"error"} and isinstance(body["error"], str), body


# Driven through Hypothesis directly rather than schemathesis' pytest plugin, whose
# from_fixture() reads a pytest-internal attribute that pytest 9 no longer has.
def refused_bodies(server) -> int:
    """Infer requests the server has answered 400 so far (both infer routes)."""
    with server.client() as c:
        text = c.get("/metrics").text
    return sum(int(float(n)) for n in re.findall(r'convt_requests_total\{endpoint="[^"]*/infer",method="POST",'
                                                r'status="400"\} (\S+)', text))


@pytest.mark.parametrize("mode", list(schemathesis.GenerationMode), ids=lambda m: m.value)
def test_no_generated_request_is_a_server_error(dcgan_server, api_schema, mode):
    ops = operations(api_schema)
    assert {"POST /v2/models/{name}/infer", "GET /v2/models/{name}", "GET /v2/health/ready"} <= set(ops)
    before = refused_bodies(dcgan_server)
    for op in ops.values():
        if mode is schemathesis.GenerationMode.NEGATIVE and not op.body:
            continue  # only string parameters: no value of them violates the schema
        # the infer routes' bodies are the target: a random model name would end at the 404 before the body is read
        pinned = {"name": "dcgan", "model_version": "1"} if op.body else None

        @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy(generation_mode=mode, path_parameters=pinned))
        def fuzz(case):
            check(case)

        fuzz()
    assert refused_bodies(dcgan_server) - before >= EXAMPLES, "the generated bodies never reached the codec's checks"


def test_serves_after_the_fuzzing(dcgan_server):
    with dcgan_server.client() as c:
        r = c.post("/v2/models/dcgan/infer", json={"inputs": [
            {"name": "latent", "shape": [1, 100, 1, 1], "datatype": "FP32", "data": [0.5] * 100}]})
        assert r.status_code == 200, r.text
        assert not re.search(r'status="5\d\d"', c.get("/metrics").text)
    assert "unhandled error" not in dcgan_server.logs()
