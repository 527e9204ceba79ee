"""The device process of a server with several HTTP front ends (``--frontends N``).

It loads the model, runs the parity check and batches for every front end; the
front ends (uvicorn on the shared port, service/workers.py) answer HTTP and hand
it decoded tensors over one link each (service/link.py). In one process the event
loop's HTTP work per request bounds requests per second long before the device
does; here that work is spread over the front ends, and this loop's share per
request is a frame in, a queue entry and a frame out.

On SIGTERM or SIGINT it keeps serving until every front end has drained and
closed its link: the requests they accepted are answered by this process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import Any

from . import serving, shared
from .dataplane import DataPlane
from .errors import ModelNotReady, ServiceError
from .group import WorkerGroup
from .link import Link
from .metrics import Metrics
from .remote import ModelCard, pack, unpack
from .settings import Settings
from .shared import DeviceSlots

log = logging.getLogger("convt.device")

EXIT_STARTUP_FAILED = 3
STARTUP_FAILED_LINGER_S = 10  # how long a failed start waits for the front ends to hear of it and close


async def serve(settings: Settings, socks: list, flags, parent: int) -> int:
    """Serves the front ends' links until all are closed; returns the process's exit code."""
    loop = asyncio.get_running_loop()
    metrics = Metrics(http=False)
    plane = DataPlane(settings, metrics, WorkerGroup(index=0, count=1, flags=flags))
    started = loop.create_future()

    async def handle(kind: str, payload: Any) -> Any:
        if not started.done():
            await asyncio.shield(started)
        started.result()  # a start that failed answers every call with its error
        if kind == "shapes":
            return plane.runtime.spec.check_shapes(payload)
        if kind == "hello":
            return ModelCard.of(plane.runtime)
        if kind == "health":
            return await plane.health.run()
        if kind == "metrics":
            return metrics.render()[0]
        raise LookupError(f"the device process answers no {kind!r} calls")

    def infer_for(slots: DeviceSlots | None):
        def infer(payload: Any) -> asyncio.Future:
            if not started.done() or started.exception() is not None:  # front ends infer only after their hello
                raise ModelNotReady("the device process has not started its model")
            inputs, timeout_s = payload
            # On CUDA the copy from the GPU lands in the shared segment itself; on the CPU there is a copy
            # either way, and here (answer: put) it stays out of the forward's reported time.
            host = slots.reserve if slots is not None and plane.runtime.device.type == "cuda" else None
            fut = plane.batcher.enqueue([unpack(i, slots) for i in inputs], timeout_s, host)
            fut.add_done_callback(_log_unexpected)
            return fut
        return infer

    def answer_for(slots: DeviceSlots | None):
        def answer(result: tuple) -> tuple:
            outputs, seconds = result
            # a large answer: in the shared segment, where the device thread put it (reserve) or copied here
            places = (slots.placed(outputs) or slots.put(outputs)) if slots is not None else None
            return (places if places is not None else [pack(o) for o in outputs]), seconds
        return answer

    links, slots = [], []
    for sock in socks:
        segment = shared.receive(sock)  # before the link reads the socket: the parent's first message
        slots.append(DeviceSlots(segment) if segment is not None else None)
        links.append(await Link.open(sock, handle,
                                     immediate={"infer": (infer_for(slots[-1]), answer_for(slots[-1]))}))
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, log.info, "%s: serving until the front ends have drained",
                                signal.Signals(signum).name)
    try:
        await plane.start()
    except Exception as exc:
        log.error("start-up failed: %s", exc)
        started.set_exception(exc)
        await _until_closed(links, parent, STARTUP_FAILED_LINGER_S)
        plane.close()
        return EXIT_STARTUP_FAILED
    if plane.runtime.device.type == "cuda":
        for s in slots:
            if s is not None:
                s.pin()
    serving.settle_heap()
    started.set_result(None)
    log.info("device process serving %d front ends", len(links))
    await _until_closed(links, parent)
    log.info("every front end has closed its link: stopping")
    plane.close()
    return 0


def _log_unexpected(fut: asyncio.Future) -> None:
    exc = None if fut.cancelled() else fut.exception()
    if exc is not None and not isinstance(exc, ServiceError):
        # the front end answers 500 and names the type; the traceback is here
        log.error("inference failed", exc_info=exc)


async def _until_closed(links: list[Link], parent: int, timeout: float | None = None) -> None:
    """Until every link is closed, the parent is gone (a SIGKILLed parent forwards no signal) or ``timeout``."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    pending = {link.lost for link in links}
    while pending:
        if os.getppid() != parent:
            log.error("the parent process is gone: stopping")
            return
        if deadline is not None and loop.time() >= deadline:
            return
        _, pending = await asyncio.wait(pending, timeout=1.0)
