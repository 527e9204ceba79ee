"""The infer endpoint as a bare ASGI handler, ahead of FastAPI's router and middleware.

Every inference request used to go through Starlette's routing (a regex per
route), FastAPI's dependency solving and a Request object, then through the
middleware chain (Starlette's error handler, FastAPI's two, ours for auth,
metrics and the worker header), each wrapping ``send``: with a cheap model the
event loop's time per request is what bounds a server's requests per second,
and that chain was a sixth of it. This handler is the app uvicorn calls: it
answers ``POST /v2/models/{name}[/versions/{v}]/infer`` itself with the same
DataPlane, limits and error bodies, counts it in the same metrics series and
names the worker as the middleware would; anything else, and an infer request
the token check refuses (its 401 is the auth middleware's), goes through the
FastAPI app. The FastAPI routes stay registered: they describe the endpoint in
/openapi.json and their templates label it in /metrics.
"""

from __future__ import annotations

import logging
import re
import time

from starlette.types import ASGIApp, Receive, Scope, Send

from . import errors
from .auth import authorized
from .body import read_body, request_header
from .codec import HEADER_LENGTH
from .dataplane import DataPlane
from .group import WORKER_HEADER
from .metrics import Metrics
from .settings import Settings

log = logging.getLogger("convt.service")

INFER_PATH = re.compile(r"/v2/models/([^/]+)(?:/versions/([^/]+))?/infer")
_HEADER_LENGTH = HEADER_LENGTH.lower().encode()
# Below this a binary body is joined and written at once: one copy of a small body costs less than a
# write per piece.
JOIN_BELOW = 256 << 10


class InferFastPath:
    def __init__(self, app: ASGIApp, plane: DataPlane, settings: Settings, routes: dict[bool, object],
                 metrics: Metrics, worker_index: int) -> None:
        self.app = app
        self.plane = plane
        self.settings = settings
        self.routes = routes  # by "has a version": the FastAPI routes whose templates label the metrics
        self.metrics = metrics
        self.worker = (WORKER_HEADER.encode(), str(worker_index).encode())
        token = settings.api_token
        self.token = token.get_secret_value().encode() if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        m = INFER_PATH.fullmatch(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if m is None or (self.token is not None and not authorized(scope, self.token)):
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        name, version = m.group(1), m.group(2)
        status = 500  # what the metrics count if sending fails before the response starts
        try:
            try:
                code, headers, body = await self._infer(scope, receive, name, version)
            except errors.ServiceError as exc:
                code, headers, body = errors.error_parts(exc)
            except Exception as exc:  # the same answer the app's catch-all gives, without its traceback hop
                log.exception("unhandled error on POST %s", scope["path"])
                code, headers, body = errors.error_parts(exc)
            parts = body if isinstance(body, list) else [body]
            if len(parts) > 1 and sum(len(p) for p in parts) < JOIN_BELOW:
                parts = [b"".join(parts)]
            headers += [(b"content-length", str(sum(len(p) for p in parts)).encode()), self.worker]
            status = code
            await send({"type": "http.response.start", "status": code, "headers": headers})
            for i, part in enumerate(parts):
                # a tensor's bytes go out as a view of the tensor (uvicorn hands it to transport.write, which
                # keeps a reference to what it has not sent yet): joining 1 MiB costs a copy of it
                await send({"type": "http.response.body", "body": part, "more_body": i < len(parts) - 1})
        finally:
            self.metrics.count_request(self.routes[version is not None].path, "POST", status,
                                       time.perf_counter() - t0)

    async def _infer(self, scope: Scope, receive: Receive, name: str, version: str | None):
        plane, s = self.plane, self.settings
        rt = plane.model(name, version)  # 404 before reading a body meant for another model
        header_length = request_header(scope, _HEADER_LENGTH)
        with plane.batcher.arriving():
            t0 = time.perf_counter()
            # binary bodies hold the input tensors themselves: into the runtime's (pinned, on CUDA) buffer
            body = await read_body(scope, receive, s.max_request_bytes, header_length,
                                   rt.host_buffer if header_length is not None else None)
            read = time.perf_counter() - t0
            result = await plane.infer(name, version, body, header_length)
        # The forward pass's time, so a client can tell protocol overhead from compute; Server-Timing splits
        # the rest of the server's time by stage (what is left of a client's latency is HTTP and the network).
        st = result.stages
        timing = (f"read;dur={read * 1e3:.3f}, decode;dur={st['decode'] * 1e3:.3f}, "
                  f"queue;dur={st['queue'] * 1e3:.3f}, compute;dur={result.compute_seconds * 1e3:.3f}, "
                  f"encode;dur={st['encode'] * 1e3:.3f}")
        headers = [(b"x-convt-compute-ms", f"{result.compute_seconds * 1e3:.3f}".encode()),
                   (b"server-timing", timing.encode())]
        if result.header_length is None:
            headers.append((b"content-type", b"application/json"))
        else:
            headers += [(b"content-type", b"application/octet-stream"),
                        (_HEADER_LENGTH, str(result.header_length).encode())]
        return 200, headers, result.body
