"""Calls between two processes of one server over a Unix socket pair (``--frontends``).

Each message is a pickled tuple (protocol 5, numpy arrays out of band) behind its
lengths, the arrays' bytes after it. Both ends are our own
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

_HEAD = struct.Struct("<QI")  # pickle bytes, out-of-band buffers; then each buffer's length (_LEN)
_LEN = struct.Struct("<Q")
STAGE_BYTES = 1 << 20  # frames up to half of it are decoded where they were read
_CALL, _OK, _ERR = 0, 1, 2
# Below this a frame is written as one joined bytes object: one copy costs less than a write per piece.
JOIN_BELOW = 64 << 10

Handler = Callable[[str, Any], Awaitable[Any]]
# kind -> (start, finish): start(payload) returns a future at once; its result, through finish, is the answer
Immediate = dict[str, tuple[Callable[[Any], asyncio.Future], Callable[[Any], Any]]]


class LinkClosed(ConnectionError):
    """The other process closed the link or is gone."""


class RemoteError(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def _decode(view: memoryview, plen: int, lens: list[int], copy: bool) -> Any:
    buffers, at = [], plen
    for n in lens:
        buffers.append(bytearray(view[at:at + n]) if copy else view[at:at + n])
        at += n
    return pickle.loads(view[:plen], buffers=buffers)


class Link(asyncio.BufferedProtocol):
    """One end of the link. ``call(kind, payload)`` returns a future of the other end's answer;
    the other end's calls go to ``handler(kind, payload)``, each in its own task, or, for the kinds in
    ``immediate``, are started at once and answered when their future is done (no task per call: the
    device process answers every inference this way)."""

    def __init__(self, handler: Handler | None = None, on_lost: Callable[[Exception | None], None] | None = None,
                 immediate: Immediate | None = None):
        self._handler = handler
        self._immediate = immediate or {}
        self._on_lost = on_lost
        self._stage = bytearray(STAGE_BYTES)
        self._have = 0  # bytes read into the stage and not decoded yet
        self._frame: bytearray | None = None  # a large frame being read
        self._filled = 0
        self._layout: tuple[int, list[int]] | None = None
        self._calls: dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task] = set()
        self.transport: asyncio.Transport | None = None
        self.lost: asyncio.Future | None = None
        self._closing = False

    @classmethod
    async def open(cls, sock, handler: Handler | None = None,
                   on_lost: Callable[[Exception | None], None] | None = None,
                   immediate: Immediate | None = None) -> "Link":
        loop = asyncio.get_running_loop()
        _, link = await loop.create_unix_connection(lambda: cls(handler, on_lost, immediate), sock=sock)
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
        # numpy arrays go out of band: their bytes are written from the arrays themselves, not copied
        # into the pickle first (the transport keeps a reference to what it has not sent yet)
        raws: list[memoryview] = []
        data = pickle.dumps(message, protocol=5, buffer_callback=lambda b: raws.append(b.raw()))
        head = _HEAD.pack(len(data), len(raws)) + b"".join(_LEN.pack(r.nbytes) for r in raws)
        if len(data) + sum(r.nbytes for r in raws) < JOIN_BELOW:
            self.transport.write(b"".join((head, data, *raws)))
        else:
            self.transport.writelines((head, data, *raws))

    # Reading (asyncio.BufferedProtocol): the socket is read into a staging buffer, where small frames are
    # decoded (their arrays copied out, the stage is reused); a large frame gets a buffer of its own that
    # the socket is then read into directly, and its arrays are views of it.

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame is not None:
            return memoryview(self._frame)[self._filled:]
        return memoryview(self._stage)[self._have:]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is not None:
            self._filled += nbytes
            if self._filled == len(self._frame):
                frame, (plen, lens) = self._frame, self._layout
                self._frame = self._layout = None
                with memoryview(frame) as view:
                    message = _decode(view, plen, lens, copy=False)
                self._dispatch(message)
            return
        self._have += nbytes
        self._drain_stage()

    def _drain_stage(self) -> None:
        stage, have, pos = self._stage, self._have, 0
        with memoryview(stage) as view:
            while have - pos >= _HEAD.size:
                plen, count = _HEAD.unpack_from(view, pos)
                start = pos + _HEAD.size + _LEN.size * count
                if have < start:
                    break
                lens = [_LEN.unpack_from(view, pos + _HEAD.size + _LEN.size * i)[0] for i in range(count)]
                total = plen + sum(lens)
                if have - start >= total:
                    message = _decode(view[start:start + total], plen, lens, copy=True)
                    pos = start + total
                    self._dispatch(message)
                    continue
                if total + _HEAD.size + _LEN.size * count > len(stage) // 2:
                    # too large to wait for in the stage: its own buffer, which the socket fills from here
                    self._frame = bytearray(total)
                    self._frame[:have - start] = view[start:have]
                    self._filled, self._layout = have - start, (plen, lens)
                    pos = have
                break
        left = have - pos
        if left and pos:
            stage[:left] = stage[pos:have]  # same length: the stage is never resized
        self._have = left

    def _dispatch(self, message: tuple) -> None:
        op, call_id, a, b = message
        if op == _CALL:
            fast = self._immediate.get(a)
            if fast is not None:
                self._start(call_id, fast, b)
                return
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

    def _start(self, call_id: int, fast, payload: Any) -> None:
        start, finish = fast
        try:
            fut = start(payload)
        except Exception as exc:
            self._fail(call_id, exc)
            return
        fut.add_done_callback(lambda f: self._finish(call_id, finish, f))

    def _finish(self, call_id: int, finish: Callable[[Any], Any], fut: asyncio.Future) -> None:
        try:
            result = finish(fut.result())  # raises the future's exception, or CancelledError
        except BaseException as exc:
            self._fail(call_id, exc)
        else:
            self._send((_OK, call_id, result, None))

    def _fail(self, call_id: int, exc: BaseException) -> None:
        self._send((_ERR, call_id, (type(exc).__name__, str(exc)), None))

    async def _answer(self, call_id: int, kind: str, payload: Any) -> None:
        try:
            if self._handler is None:
                raise LookupError(f"this end answers no calls (asked {kind!r})")
            result = await self._handler(kind, payload)
        except Exception as exc:
            self._fail(call_id, exc)
        else:
            self._send((_OK, call_id, result, None))
