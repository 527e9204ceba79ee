"""Per-request limits that are not about the body's size (body.py has that).

The element limit is checked on the shapes the request declares, before the
codec decodes or allocates anything; the deadline bounds how long a client
waits for an inference, queueing for the device included.
"""

from __future__ import annotations

import asyncio
import logging
import math
import sys
from typing import Awaitable, Iterable, TypeVar

from .errors import InvalidRequest, RequestTimeout
from .protocol import RequestInput

log = logging.getLogger("convt.service")
T = TypeVar("T")


def check_tensor_elements(inputs: Iterable[RequestInput], limit: int) -> None:
    for inp in inputs:
        count = math.prod(inp.shape)  # Python ints: a declared 2**200 does not wrap around
        if count > limit:
            raise InvalidRequest(f"input {inp.name!r} declares shape {inp.shape}, {count} elements; the limit is "
                                 f"{limit} elements per tensor (--max-tensor-elements / CONVT_MAX_TENSOR_ELEMENTS)")


async def within(awaitable: Awaitable[T], seconds: float, what: str) -> T:
    """The awaitable's result, or RequestTimeout after ``seconds`` (0: no limit).

    A request still queued for the device is dropped from the queue; a forward
    already running on the device thread cannot be interrupted and finishes
    unobserved, so the requests behind it wait for it as before.
    """
    if not seconds:
        return await awaitable
    try:
        if sys.version_info >= (3, 11):
            # in the caller's task: 3.11's wait_for wraps the awaitable in a task of its own, one more
            # loop hop per request
            async with asyncio.timeout(seconds):
                return await awaitable
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        log.warning("%s took more than %g s: answered 504", what, seconds)
        raise RequestTimeout(f"{what} did not finish within {seconds:g} s (--request-timeout-s / "
                             f"CONVT_REQUEST_TIMEOUT_S); the server keeps serving: retry later or with a smaller "
                             f"batch") from None
