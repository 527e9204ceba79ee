"""uvicorn's configuration and event loop for one server process (``python -m service`` and each worker).

uvicorn's "auto" choices take httptools and uvloop when they import (both are
dependencies): httptools parses HTTP in C where h11 spends about half the event
loop's time per request, and the event loop bounds requests per second. What
was picked is logged at start, so a slow run can be told from a missing wheel.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
from typing import Any, Coroutine

import uvicorn

from . import malloc
from .settings import Settings

log = logging.getLogger("convt.service")


def config(app: Any, settings: Settings) -> uvicorn.Config:
    # Process-wide, so set where every entry point (the server, each worker, the device process) builds its config.
    sys.setswitchinterval(settings.switch_interval_us / 1e6)
    malloc.keep_request_buffers()
    return uvicorn.Config(app, host=settings.host, port=settings.port, log_level=settings.log_level, log_config=None,
                          access_log=settings.access_log, timeout_graceful_shutdown=settings.shutdown_timeout_s)


# Young objects a collection waits for (Python's default is 700). A request allocates a few dozen
# containers, nearly all freed by reference counting; at 700 the collector ran every ~25 requests.
GC_GEN0_THRESHOLD = 20_000


def settle_heap() -> None:
    """Once the model is loaded: the objects alive now (torch, the model, FastAPI, pydantic's schemas:
    some 200,000) move to the permanent generation, where no collection scans them again. Before,
    each full collection under load walked them all (~80 ms on two cores, a stall every few seconds)."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


def stack(config: uvicorn.Config) -> str:
    """What serves HTTP in this process; call it on the running loop."""
    if not config.loaded:
        config.load()
    http = config.http_protocol_class.__name__
    http = {"HttpToolsProtocol": "httptools", "H11Protocol": "h11"}.get(http, http)
    loop = type(asyncio.get_running_loop()).__module__.partition(".")[0]
    return f"HTTP parser {http}, event loop {loop}"


async def serve(server: uvicorn.Server, **kwargs: Any) -> None:
    log.info("%s", stack(server.config))
    await server.serve(**kwargs)


def run(config: uvicorn.Config, main: Coroutine) -> Any:
    """``main`` on the loop uvicorn's config asks for (uvloop when installed), as ``Server.run`` does."""
    factory = config.get_loop_factory()
    if sys.version_info >= (3, 11):
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(main)
    loop = factory() if factory is not None else asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(main)
    finally:
        asyncio.set_event_loop(None)
        loop.close()
