"""Reading a request body within the size limit, inflating gzip/deflate.

The limit holds for the body as sent and for what it inflates to, so neither a
large upload nor a small compressed bomb reaches memory.
"""

from __future__ import annotations

import zlib

from starlette.requests import ClientDisconnect, Request

from .errors import ClientClosedRequest, InvalidRequest, PayloadTooLarge, UnsupportedMediaType


def _too_large(size: int | str, limit: int, what: str = "request body") -> PayloadTooLarge:
    return PayloadTooLarge(f"{what} is {size} bytes; the limit is {limit} bytes "
                           f"(--max-request-bytes / CONVT_MAX_REQUEST_BYTES)")


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise InvalidRequest(f"Content-Length must be a non-negative integer, got {declared!r}")
        if int(declared) > limit:
            raise _too_large(int(declared), limit)
    chunks, total = [], 0
    try:
        async for chunk in request.stream():
            total += len(chunk)
            if total > limit:
                raise _too_large(f"more than {limit}", limit)
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientClosedRequest(f"the client closed the connection after {total} bytes of the body") from None
    body = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise UnsupportedMediaType(f"Content-Encoding {encoding!r} is not supported; send gzip, deflate or identity")
    return _inflate(body, encoding, limit)


def _inflate(body: bytes, encoding: str, limit: int) -> bytes:
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
