"""service/body.py on its own, fed ASGI messages as uvicorn sends them."""

from __future__ import annotations

import asyncio
import gzip

import pytest
import numpy as np
import torch

from service.body import ALIGN, read_body
from service.errors import ClientClosedRequest, InvalidRequest, PayloadTooLarge


def receiving(*chunks: bytes, disconnect: bool = False):
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    if disconnect:
        messages[-1]["more_body"] = True
        messages.append({"type": "http.disconnect"})
    it = iter(messages)

    async def receive():
        return next(it)
    return receive


def scope(**headers: str) -> dict:
    return {"headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]}


@pytest.mark.parametrize("header_length", [0, 1, 17, 63, 64, 100])
def test_binary_part_starts_aligned(header_length):
    body = bytes(range(256)) * 4
    got = asyncio.run(read_body(scope(content_length=str(len(body))), receiving(body[:300], body[300:]), 10_000,
                                str(header_length)))
    assert bytes(got) == body and not got.readonly
    tail = torch.frombuffer(got[header_length:], dtype=torch.uint8)
    assert tail.data_ptr() % ALIGN == 0


def test_body_is_read_into_the_buffer_alloc_gives():
    # a CUDA server passes pinned memory here: the input tensors must be views of that very buffer
    given = []

    def alloc(n: int) -> np.ndarray:
        given.append(torch.empty(n, dtype=torch.uint8))
        return given[-1].numpy()

    body = bytes(range(256)) * 3
    got = asyncio.run(read_body(scope(content_length=str(len(body))), receiving(body[:100], body[100:]), 10_000,
                                "40", alloc))
    assert bytes(got) == body and len(given) == 1
    start = torch.frombuffer(got, dtype=torch.uint8).data_ptr()
    assert given[0].data_ptr() <= start and start + len(body) <= given[0].data_ptr() + given[0].numel()
    assert (start + 40) % ALIGN == 0


def test_without_content_length_and_gzip():
    body = b'{"a": 1}' * 100
    got = asyncio.run(read_body(scope(), receiving(body[:10], body[10:]), 10_000))
    assert bytes(got) == body
    packed = gzip.compress(body)
    got = asyncio.run(read_body(scope(content_length=str(len(packed)), content_encoding="gzip"),
                                receiving(packed), 10_000))
    assert bytes(got) == body


def test_limits_and_hang_ups():
    with pytest.raises(PayloadTooLarge):
        asyncio.run(read_body(scope(content_length="20"), receiving(b"x" * 20), 10))
    with pytest.raises(PayloadTooLarge):
        asyncio.run(read_body(scope(), receiving(b"x" * 6, b"x" * 6), 10))
    with pytest.raises(InvalidRequest, match="longer than its Content-Length"):
        asyncio.run(read_body(scope(content_length="4"), receiving(b"x" * 6), 10))
    with pytest.raises(ClientClosedRequest, match="after 3 bytes"):
        asyncio.run(read_body(scope(content_length="8"), receiving(b"abc", disconnect=True), 10))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_server_reads_binary_bodies_into_pinned_memory():
    # a batch-1 input is a view of the body: pinned, it goes to the device without pin_memory()'s copy
    import models
    from service.runtime import PIN_BODY_MAX, PIN_BODY_MIN, Runtime

    rt = Runtime(models.load_model("dcgan"), torch.device("cuda"), torch.float32, {}, [], {})
    try:
        x = torch.randn(1, 100, 16, 16)  # 100 KiB: past PIN_BODY_MIN
        head = b'{"inputs": []}'
        body = head + x.numpy().tobytes()
        got = asyncio.run(read_body(scope(content_length=str(len(body))), receiving(body), 1 << 20,
                                    str(len(head)), rt.host_buffer))
        view = torch.frombuffer(got[len(head):], dtype=torch.float32).reshape(x.shape)
        assert view.is_pinned()
        assert torch.equal(rt._to_device(view).cpu(), x)
        pinned = lambda n: torch.from_numpy(rt.host_buffer(n)).is_pinned()  # noqa: E731
        assert pinned(PIN_BODY_MIN)
        assert not pinned(PIN_BODY_MAX + 1)  # large bodies stay pageable
        assert not pinned(PIN_BODY_MIN - 1)  # and small ones: the batch's buffer is pinned
    finally:
        rt.close()
