"""A server process's place among the workers that share one port.

Clients reach whichever worker accepts their connection, so readiness is the
group's: a worker answers ready only while every worker's last parity check
passed. The flags live in shared memory that the parent allocates, one byte per
worker; a worker alone (``--workers 1``) has none and answers for itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

WORKER_HEADER = "x-convt-worker"


@dataclass
class WorkerGroup:
    index: int = 0
    count: int = 1
    flags: Any = None  # multiprocessing.Array("b", count) shared by all workers, or None when alone
    pid: int = field(default_factory=os.getpid)
    own: bool = False

    def publish(self, ready: bool) -> None:
        self.own = ready
        if self.flags is not None:
            self.flags[self.index] = 1 if ready else 0

    def peers_ready(self) -> list[bool]:
        """Each worker's last parity result, by index (this worker's alone when it has no peers)."""
        return [bool(f) for f in self.flags] if self.flags is not None else [self.own]

    def all_ready(self, own: bool) -> bool:
        return own and all(self.peers_ready())

    def describe(self) -> dict[str, Any]:
        return {"index": self.index, "count": self.count, "pid": self.pid, "ready": self.peers_ready()}


class WorkerHeaderMiddleware:
    """Names the answering worker on every response, so that a client (or a test)
    can tell which process served it."""

    def __init__(self, app: ASGIApp, index: int) -> None:
        self.app = app
        self.value = str(index).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (WORKER_HEADER.encode(), self.value)]
            await send(message)

        await self.app(scope, receive, send_with_header)
