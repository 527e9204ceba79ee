"""Dynamic batching against real servers: batched answers equal one-by-one
answers (to the bit on the CPU, within TF32's precision on CUDA), batches really form, and a full queue answers 429
with Retry-After."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import numpy as np
import pytest
import torch

from .conftest import DEVICE, running_server

INFER = "/v2/models/dcgan/infer"
HEADER = "Inference-Header-Content-Length"


def binary_request(x: torch.Tensor) -> tuple[bytes, dict[str, str]]:
    import json

    head = json.dumps({"inputs": [{"name": "latent", "shape": list(x.shape), "datatype": "FP32",
                                   "parameters": {"binary_data_size": x.numel() * 4}}],
                       "parameters": {"binary_data_output": True}}).encode()
    return head + x.numpy().tobytes(), {HEADER: str(len(head)), "Content-Type": "application/octet-stream"}


def output_of(resp: httpx.Response) -> np.ndarray:
    import json

    n = int(resp.headers[HEADER])
    out = json.loads(resp.content[:n])["outputs"][0]
    return np.frombuffer(resp.content[n:], dtype=np.float32).reshape(out["shape"])


def assert_same_answer(got: httpx.Response, want: httpx.Response) -> None:
    """A batched answer against the same request's answer alone. On the CPU every output is computed from its own
    input row in the same order whatever the batch: the same bits. On CUDA a kernel's tile configuration is
    picked by the layer's shape, batch included, and sets its summation order: the served dcgan's 128->64 layer (the
    cols kernel) gives image 0 other bits in 84% of its outputs at a batch of 16 than alone, at most 1.9e-8 apart
    (on an H100, docs/patches/s69/dcgan_paths.py). So there the answers agree within TF32's precision (1e-3 of the
    output's largest magnitude, the kernel tests' TF32 tolerance), not to the bit."""
    a, b = output_of(got), output_of(want)
    if DEVICE == "cpu":
        np.testing.assert_array_equal(a, b)
    else:
        assert a.shape == b.shape and np.isfinite(a).all()
        assert np.abs(a - b).max() <= 1e-3 * np.abs(b).max(), (np.abs(a - b).max(), np.abs(b).max())


async def send_all(url: str, bodies: list[tuple[bytes, dict[str, str]]]) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=url, timeout=120) as c:
        return await asyncio.gather(*(c.post(INFER, content=b, headers=h) for b, h in bodies))


def batch_histogram(url: str) -> tuple[float, float]:
    text = httpx.get(url + "/metrics").text
    count = float(re.search(r'convt_batch_size_count\{model="dcgan"\} (\S+)', text).group(1))
    total = float(re.search(r'convt_batch_size_sum\{model="dcgan"\} (\S+)', text).group(1))
    return count, total


@pytest.fixture(scope="module")
def requests_():
    gen = torch.Generator().manual_seed(7)
    # mostly batch-1 requests, as clients send them, and a few of 2 and 3 rows
    sizes = [1] * 20 + [2, 3, 1, 2]
    return [binary_request(torch.randn(n, 100, 1, 1, generator=gen)) for n in sizes]


def test_batched_answers_equal_one_by_one(tmp_path_factory, requests_):
    with running_server(tmp_path_factory, "batched", "--max-batch-size", "16", "--max-queue-delay-us", "50000") as on:
        batched = asyncio.run(send_all(on.url, requests_))
        count, rows = batch_histogram(on.url)
    with running_server(tmp_path_factory, "unbatched", "--max-batch-size", "1") as off:
        alone = asyncio.run(send_all(off.url, requests_))
        count_off, rows_off = batch_histogram(off.url)
    assert all(r.status_code == 200 for r in batched + alone), [r.text for r in batched + alone if r.status_code != 200]
    # Batches formed: fewer forward passes than requests (all requests' rows counted once).
    assert rows == rows_off == 28
    assert count < len(requests_), f"{count} forward passes for {len(requests_)} concurrent requests"
    assert count_off == len(requests_)
    for b, a in zip(batched, alone):
        assert_same_answer(b, a)


def test_full_queue_answers_429_with_retry_after(tmp_path_factory):
    x = torch.randn(64, 100, 1, 1)  # a 64-row forward keeps the device busy while the rest queue
    body = binary_request(x)
    with running_server(tmp_path_factory, "tiny-queue", "--max-batch-size", "1", "--max-queue-size", "2") as server:
        responses = asyncio.run(send_all(server.url, [body] * 40))
        codes = [r.status_code for r in responses]
        assert set(codes) <= {200, 429}, codes
        assert codes.count(429) > 0 and codes.count(200) >= 2, codes
        refused = next(r for r in responses if r.status_code == 429)
        assert refused.headers["Retry-After"] == "1"
        assert "max-queue-size" in refused.json()["error"]
        # the server keeps serving, and counted what it refused
        assert httpx.post(server.url + INFER, content=body[0], headers=body[1], timeout=120).status_code == 200
        assert f"convt_queue_rejected_total{{model=\"dcgan\"}} {float(codes.count(429))}" in httpx.get(
            server.url + "/metrics").text


def slow_request(x: torch.Tensor) -> tuple[bytes, dict[str, str]]:
    head = json.dumps({"inputs": [{"name": "input__0", "shape": list(x.shape), "datatype": "FP32",
                                   "parameters": {"binary_data_size": x.numel() * 4}}]}).encode()
    return head + x.numpy().tobytes(), {HEADER: str(len(head))}


@pytest.mark.parametrize("processes", [[], ["--frontends", "2"]], ids=["one", "frontends"])
def test_a_failing_request_does_not_fail_its_batch_mates(tmp_path_factory, processes):
    # test models are loaded by the server only, never imported here: the marks of slow_model.py
    slow_mark, poison_mark = 4242.0, -4343.0
    hold = torch.zeros(1, 4, 5, 5)
    hold.view(-1)[0], hold.view(-1)[-1] = 1.0, slow_mark  # a 1 s forward: the rest queue behind it, together
    gen = torch.Generator().manual_seed(3)
    good = [torch.randn(1, 4, 5, 5, generator=gen) for _ in range(6)]
    poison = torch.randn(1, 4, 5, 5, generator=gen)
    poison.view(-1)[-1] = poison_mark

    async def scenario(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=120) as c:
            first = asyncio.ensure_future(c.post("/v2/models/slow/infer", content=slow_request(hold)[0],
                                                 headers=slow_request(hold)[1]))
            await asyncio.sleep(0.3)
            rest = [slow_request(t) for t in good[:3] + [poison] + good[3:]]
            # gathered before awaiting the first: sent while its forward holds the device, so they queue
            # together (awaited first, they were sent after it and batched only by how they happened to arrive)
            queued = asyncio.gather(*(c.post("/v2/models/slow/infer", content=b, headers=h) for b, h in rest))
            return [await first, *await queued]

    with running_server(tmp_path_factory, "poison", "--model", "tests.service.slow_model:factory",
                        "--max-batch-size", "16", "--max-queue-delay-us", "100000", *processes) as server:
        responses = asyncio.run(scenario(server.url))
        count, rows = (float(re.search(rf'convt_batch_size_{k}{{model="slow"}} (\S+)', httpx.get(
            server.url + "/metrics").text).group(1)) for k in ("count", "sum"))
    codes = [r.status_code for r in responses]
    assert codes == [200, 200, 200, 200, 500, 200, 200, 200], [r.text for r in responses]
    assert "ValueError" in responses[4].json()["error"]
    # the poisoned request's batch ran once whole and again one request at a time: rows counted twice
    assert rows > len(responses), (count, rows)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # models.registry.INIT_SEED: the server's parameters
        reference = torch.nn.ConvTranspose2d(4, 2, 3, stride=2)
    for r, x in zip(responses[1:4] + responses[5:], good):
        n = int(r.headers.get(HEADER, len(r.content)))
        out = json.loads(r.content[:n])["outputs"][0]
        got = torch.tensor(out["data"]).reshape(out["shape"])
        torch.testing.assert_close(got, reference(x).detach(), rtol=1e-5, atol=1e-5)
