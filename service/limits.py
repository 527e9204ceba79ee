"""Per-request limits that are not about the body's size (body.py has that).

The element limit is checked on the shapes the request declares, before the
codec decodes or allocates anything; the deadline bounds how long a client
waits for an inference, queueing for the device included.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Iterable

from .errors import InvalidRequest, RequestTimeout
from .protocol import RequestInput

log = logging.getLogger("convt.service")


def check_tensor_elements(inputs: Iterable[RequestInput], limit: int) -> None:
    for inp in inputs:
        count = math.prod(inp.shape)  # Python ints: a declared 2**200 does not wrap around
        if count > limit:
            raise InvalidRequest(f"input {inp.name!r} declares shape {inp.shape}, {count} elements; the limit is "
                                 f"{limit} elements per tensor (--max-tensor-elements / CONVT_MAX_TENSOR_ELEMENTS)")


def deadline(future: asyncio.Future, seconds: float, model: str) -> asyncio.TimerHandle | None:
    """Fails ``future`` with RequestTimeout after ``seconds`` (0: no limit) unless it is done by then;
    cancel the handle once it is. A request still queued for the device is then skipped by the batcher;
    a forward already running on the device thread cannot be interrupted and finishes unobserved, so the
    requests behind it wait for it as before. A timer on the future the handler awaits costs the event
    loop a quarter of what ``asyncio.timeout`` around the handler did (its context manager, a reschedule
    and the task's cancellation machinery, per request)."""
    if not seconds:
        return None
    return future.get_loop().call_later(seconds, _expire, future, seconds, model)


def _expire(future: asyncio.Future, seconds: float, model: str) -> None:
    if future.done():
        return
    what = f"inference on model {model!r}"
    log.warning("%s took more than %g s: answered 504", what, seconds)
    future.set_exception(RequestTimeout(f"{what} did not finish within {seconds:g} s (--request-timeout-s / "
                                        f"CONVT_REQUEST_TIMEOUT_S); the server keeps serving: retry later or "
                                        f"with a smaller batch"))
