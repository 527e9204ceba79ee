"""Calls between two processes of one server over a Unix socket pair (``--frontends``).

Each message is a pickled tuple behind its 8-byte length. Both ends are our own
processes, spawned by the same parent over a socket pair nobody else holds; a
client's tensor bytes travel inside as numpy arrays, never as pickles of their own.
A call is answered with the callee's value, or with its exception's type name and
message (``RemoteError``), which the caller maps back to its own errors.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import pickle
import struct
from typing import Any, Awaitable, Callable

log = logging.getLogger("convt.link")

_LEN = struct.Struct("<Q")
_CALL, _OK, _ERR = 0, 1, 2
# Below this a frame is written as one joined bytes object: one copy costs less than a write per piece.
JOIN_BELOW = 64 << 10

Handler = Callable[[str, Any], Awaitable[Any]]


class LinkClosed(ConnectionError):
    """The other process closed the link or is gone."""


class RemoteError(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class Link(asyncio.Protocol):
    """One end of the link. ``call(kind, payload)`` returns a future of the other end's answer;
    the other end's calls go to ``handler(kind, payload)``, each in its own task."""

    def __init__(self, handler: Handler | None = None, on_lost: Callable[[Exception | None], None] | None = None):
        self._handler = handler
        self._on_lost = on_lost
        self._buf = bytearray()
        self._calls: dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task] = set()
        self.transport: asyncio.Transport | None = None
        self.lost: asyncio.Future | None = None
        self._closing = False

    @classmethod
    async def open(cls, sock, handler: Handler | None = None,
                   on_lost: Callable[[Exception | None], None] | None = None) -> "Link":
        loop = asyncio.get_running_loop()
        _, link = await loop.create_unix_connection(lambda: cls(handler, on_lost), sock=sock)
        return link

    @property
    def open_calls(self) -> int:
        return len(self._calls)

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.lost = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        for fut in self._calls.values():
            if not fut.done():
                fut.set_exception(LinkClosed("the other process closed the link" + (f": {exc}" if exc else "")))
        self._calls.clear()
        if not self.lost.done():
            self.lost.set_result(None)
        if self._on_lost is not None and not self._closing:
            self._on_lost(exc)

    def close(self) -> None:
        """Closes this end; ``on_lost`` is for the other end closing or going away, not for this."""
        self._closing = True
        if self.transport is not None:
            self.transport.close()

    def call(self, kind: str, payload: Any = None) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        if self.transport is None or self.transport.is_closing():
            fut.set_exception(LinkClosed("the link to the other process is closed"))
            return fut
        call_id = next(self._ids)
        self._calls[call_id] = fut
        self._send((_CALL, call_id, kind, payload))
        return fut

    def _send(self, message: tuple) -> None:
        if self.transport is None or self.transport.is_closing():
            return  # the caller is gone: nobody reads the answer
        data = pickle.dumps(message, protocol=5)
        head = _LEN.pack(len(data))
        if len(data) < JOIN_BELOW:
            self.transport.write(head + data)
        else:
            self.transport.writelines((head, data))

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        if buf:
            buf += data
            data = buf
        end = self._frames(data)
        if data is buf:
            del buf[:end]
        elif end < len(data):
            buf += memoryview(data)[end:]

    def _frames(self, data) -> int:
        """Dispatches every whole frame in ``data``; returns where the first partial one starts."""
        pos, size = 0, len(data)
        with memoryview(data) as view:
            while size - pos >= _LEN.size:
                (length,) = _LEN.unpack_from(view, pos)
                end = pos + _LEN.size + length
                if end > size:
                    break
                message = pickle.loads(view[pos + _LEN.size:end])
                pos = end
                self._dispatch(message)
        return pos

    def _dispatch(self, message: tuple) -> None:
        op, call_id, a, b = message
        if op == _CALL:
            task = asyncio.get_running_loop().create_task(self._answer(call_id, a, b))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        fut = self._calls.pop(call_id, None)
        if fut is None or fut.done():
            return  # the caller stopped waiting (cancelled)
        if op == _OK:
            fut.set_result(a)
        else:
            fut.set_exception(RemoteError(*a))

    async def _answer(self, call_id: int, kind: str, payload: Any) -> None:
        try:
            if self._handler is None:
                raise LookupError(f"this end answers no calls (asked {kind!r})")
            result = await self._handler(kind, payload)
        except Exception as exc:
            self._send((_ERR, call_id, (type(exc).__name__, str(exc)), None))
        else:
            self._send((_OK, call_id, result, None))
