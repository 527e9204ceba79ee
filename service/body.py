"""Reading a request body within the size limit, inflating gzip/deflate.

The limit holds for the body as sent and for what it inflates to, so neither a
large upload nor a small compressed bomb reaches memory.

A body with a Content-Length is read into one buffer of that size as it
arrives (no list of chunks joined at the end), placed so that the binary
tensor data after the JSON header starts on a 64-byte boundary: the codec then
makes tensors that are views of the body, with no copy. The buffer is a numpy
array, not zeroed (a 1 MiB bytearray spends ~65 us zeroing pages the body
overwrites), or comes from ``alloc``: a CUDA server passes pinned memory, so a
batch-1 input goes to the device without another host copy.
"""

from __future__ import annotations

import zlib
from typing import Callable

import numpy as np
from starlette.types import Receive, Scope

from .errors import ClientClosedRequest, InvalidRequest, PayloadTooLarge, UnsupportedMediaType

ALIGN = 64


def _too_large(size: int | str, limit: int, what: str = "request body") -> PayloadTooLarge:
    return PayloadTooLarge(f"{what} is {size} bytes; the limit is {limit} bytes "
                           f"(--max-request-bytes / CONVT_MAX_REQUEST_BYTES)")


def request_header(scope: Scope, name: bytes) -> str | None:
    """The value of header ``name`` (lower-case bytes) in an ASGI scope; the last one if repeated."""
    value = None
    for k, v in scope["headers"]:
        if k == name:
            value = v.decode("latin-1")
    return value


def _pageable(nbytes: int) -> np.ndarray:
    return np.empty(nbytes, dtype=np.uint8)  # a quarter of torch.empty's time for a small body


def _aligned(size: int, header_length: str | None, alloc: Callable[[int], np.ndarray]) -> memoryview:
    """A writable buffer of ``size`` bytes whose byte ``header_length`` sits on an ALIGN boundary."""
    n = int(header_length) if header_length is not None and header_length.strip().isdecimal() else 0
    buf = alloc(size + ALIGN)
    pad = (-(buf.ctypes.data + n)) % ALIGN
    return memoryview(buf)[pad:pad + size]  # the view keeps the array (and any tensor under it) alive


async def read_body(scope: Scope, receive: Receive, limit: int, header_length: str | None = None,
                    alloc: Callable[[int], np.ndarray] | None = None) -> memoryview:
    """The body, writable; ``header_length`` (Inference-Header-Content-Length) only places it, ``alloc``
    (bytes -> a uint8 numpy array) supplies the buffer of a body with a Content-Length."""
    declared = request_header(scope, b"content-length")
    if declared is not None:
        if not declared.strip().isdecimal():
            raise InvalidRequest(f"Content-Length must be a non-negative integer, got {declared!r}")
        if int(declared) > limit:
            raise _too_large(int(declared), limit)
    encoding = (request_header(scope, b"content-encoding") or "identity").strip().lower()
    if encoding not in ("", "identity", "gzip", "deflate"):
        raise UnsupportedMediaType(f"Content-Encoding {encoding!r} is not supported; send gzip, deflate or identity")
    if declared is not None:
        body = await _read_into(receive, _aligned(int(declared), header_length, alloc or _pageable))
    else:
        body = await _read_chunked(receive, limit)
    if encoding in ("", "identity"):
        return body
    return memoryview(bytearray(_inflate(body, encoding, limit)))


async def _read_into(receive: Receive, view: memoryview) -> memoryview:
    total = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientClosedRequest(f"the client closed the connection after {total} bytes of the body")
        chunk = message.get("body", b"")
        if total + len(chunk) > len(view):  # uvicorn stops a body at its Content-Length; an ASGI server might not
            raise InvalidRequest(f"the body is longer than its Content-Length ({len(view)} bytes)")
        view[total:total + len(chunk)] = chunk
        total += len(chunk)
        if not message.get("more_body", False):
            return view[:total]


async def _read_chunked(receive: Receive, limit: int) -> memoryview:
    buf = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientClosedRequest(f"the client closed the connection after {len(buf)} bytes of the body")
        buf += message.get("body", b"")
        if len(buf) > limit:
            raise _too_large(f"more than {limit}", limit)
        if not message.get("more_body", False):
            return memoryview(buf)


def _inflate(body: memoryview, encoding: str, limit: int) -> bytes:
    # wbits: 16+ for a gzip wrapper; 32+ lets zlib detect zlib vs raw deflate streams
    d = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else 32 + zlib.MAX_WBITS)
    try:
        out = d.decompress(body, limit + 1)
    except zlib.error as exc:
        raise InvalidRequest(f"body is not valid {encoding} data: {exc}") from None
    if len(out) > limit:
        raise _too_large(f"more than {limit} (inflated)", limit, "inflated request body")
    if not d.eof:
        raise InvalidRequest(f"body is truncated {encoding} data")
    return out
