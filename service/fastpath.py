"""The infer endpoint as a bare ASGI handler, ahead of FastAPI's router.

Every inference request used to go through Starlette's routing (a regex per
route), FastAPI's dependency solving and a Request object: about a third of
the event loop's time per request with a cheap model, and the event loop is
what bounds a server's requests per second. This handler answers
``POST /v2/models/{name}[/versions/{v}]/infer`` itself with the same
DataPlane, limits and error bodies, and hands everything else on. The FastAPI
routes stay registered: they describe the endpoint in /openapi.json and label
it in /metrics (``scope["route"]``), so clients and dashboards see no change.
"""

from __future__ import annotations

import logging
import re
import time

from starlette.types import ASGIApp, Receive, Scope, Send

from . import errors, limits
from .body import read_body, request_header
from .codec import HEADER_LENGTH
from .dataplane import DataPlane
from .settings import Settings

log = logging.getLogger("convt.service")

INFER_PATH = re.compile(r"/v2/models/([^/]+)(?:/versions/([^/]+))?/infer")
_HEADER_LENGTH = HEADER_LENGTH.lower().encode()
# Below this a binary body is joined and written at once: one copy of a small body costs less than a
# write per piece.
JOIN_BELOW = 256 << 10


class InferFastPath:
    def __init__(self, app: ASGIApp, plane: DataPlane, settings: Settings, routes: dict[bool, object]) -> None:
        self.app = app
        self.plane = plane
        self.settings = settings
        self.routes = routes  # by "has a version": the FastAPI routes whose templates label the metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        m = INFER_PATH.fullmatch(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if m is None:
            await self.app(scope, receive, send)
            return
        name, version = m.group(1), m.group(2)
        scope["route"] = self.routes[version is not None]
        try:
            status, headers, body = await self._infer(scope, receive, name, version)
        except errors.ServiceError as exc:
            status, headers, body = errors.error_parts(exc)
        except Exception as exc:  # the same answer the app's catch-all gives, without its traceback hop
            log.exception("unhandled error on POST %s", scope["path"])
            status, headers, body = errors.error_parts(exc)
        parts = body if isinstance(body, list) else [body]
        if len(parts) > 1 and sum(len(p) for p in parts) < JOIN_BELOW:
            parts = [b"".join(parts)]
        headers.append((b"content-length", str(sum(len(p) for p in parts)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for i, part in enumerate(parts):
            # a tensor's bytes go out as a view of the tensor (uvicorn hands it to transport.write, which
            # keeps a reference to what it has not sent yet): joining 1 MiB costs a copy of it
            await send({"type": "http.response.body", "body": part, "more_body": i < len(parts) - 1})

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
            result = await limits.within(plane.infer(name, version, body, header_length), s.request_timeout_s,
                                         f"inference on model {name!r}")
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
