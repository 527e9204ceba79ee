"""A front end's view of the model served by the device process (``--frontends``).

The device process owns the model, the batcher and the parity check; a front end
holds what answering HTTP needs locally: the model's card (names, shapes,
datatypes, provenance) and the output shapes it has already been told, and hands
decoded tensors over the link. What the device process raises comes back as the
same service error, so a front end answers exactly as a single process would.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import models

from . import errors, shared
from .batcher import batch_key, can_batch
from .bounded import Bounded
from .link import Link, LinkClosed, RemoteError
from .runtime import split_rows
from .shared import DeviceSlots, FrontSlots

log = logging.getLogger("convt.remote")

# Output shapes the device process has computed, per tuple of input shapes; bounded like the plans.
SHAPES_MAX = 256


@dataclass(frozen=True)
class ModelCard:
    """What a front end needs of the served model; built by the device process, sent once."""

    name: str
    platform: str
    description: str
    weights: dict[str, Any]
    inputs: list[models.TensorSpec]
    outputs: list[models.TensorSpec]
    device: str
    dtype: torch.dtype
    layers: list[dict[str, Any]]

    @classmethod
    def of(cls, runtime) -> "ModelCard":
        s = runtime.spec
        return cls(s.name, s.platform, s.description, s.weights, list(s.inputs), list(s.outputs),
                   str(runtime.device), runtime.dtype, runtime.layers)


def pack(t: torch.Tensor, slots: FrontSlots | None = None) -> tuple:
    """A tensor as it crosses the link: its place in the shared segment when it lies there (a large body,
    service/shared.py), else its bytes as a numpy array; numpy has no bfloat16, so those go as int16."""
    t = t.contiguous()
    if slots is not None and (offset := slots.where(t)) is not None:
        return offset, t.numel() * t.element_size(), t.dtype, tuple(t.shape)
    if t.dtype == torch.bfloat16:
        return True, t.view(torch.int16).numpy()
    return False, t.numpy()


def unpack(item: tuple, slots: DeviceSlots | None = None) -> torch.Tensor:
    if len(item) == 4:
        if slots is None:
            raise RuntimeError("a tensor in shared memory on a link that has none")
        return slots.tensor(*item)
    bf16, array = item
    t = torch.from_numpy(array)
    return t.view(torch.bfloat16) if bf16 else t


def unpack_answer(items: list[tuple], slots: FrontSlots | None) -> list[torch.Tensor]:
    """A front end's side of an answer: over the socket each tensor as ``unpack`` reads it, or all of them
    in one output slot of the shared segment (``DeviceSlots.put``)."""
    if items and len(items[0]) == 4:
        if slots is None:
            raise RuntimeError("an answer in shared memory on a link that has none")
        return slots.answer(items)
    return [unpack(i) for i in items]


_ERRORS = {cls.__name__: cls for cls in vars(errors).values()
           if isinstance(cls, type) and issubclass(cls, errors.ServiceError)}
_ERRORS["ShapeError"] = models.ShapeError
# Python's own (a model's ValueError, a RuntimeError from torch): the same type, so the 500's body names it
_BUILTIN = {name: cls for name, cls in vars(builtins).items()
            if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, OSError)}


def local_error(exc: Exception, model: str) -> Exception:
    """The device process's error as this process's own: the same class for service errors (so the same
    status and message) and Python's own, 503 when the device process is gone, else as it came (500)."""
    if isinstance(exc, LinkClosed):
        return errors.ModelNotReady(f"model {model!r} is not available: its device process has stopped")
    if isinstance(exc, RemoteError):
        cls = _ERRORS.get(exc.kind) or _BUILTIN.get(exc.kind)
        if cls is not None:
            try:
                return cls(exc.message)
            except Exception:  # a builtin whose constructor wants more (UnicodeDecodeError)
                return exc
    return exc


async def _ask(link: Link, model: str, kind: str, payload: Any = None) -> Any:
    """The device process's answer to one call, its errors as this process's own (``local_error``)."""
    try:
        return await link.call(kind, payload)
    except Exception as exc:
        raise local_error(exc, model) from None


class RemoteRuntime:
    """Stands where DataPlane keeps its Runtime: the card's fields, readiness from the device
    process's flag, output shapes asked once per input shapes."""

    def __init__(self, card: ModelCard, link: Link, flags, slots: FrontSlots | None = None):
        self.spec = card
        self.slots = slots
        self.device = card.device
        self.dtype = card.dtype
        self.layers = card.layers
        self.link = link
        self._flags = flags
        self._shapes = Bounded(SHAPES_MAX)

    @property
    def ready(self) -> bool:
        return self.link.transport is not None and bool(self._flags[0])

    def host_buffer(self, nbytes: int) -> np.ndarray:
        """A large body's buffer in shared memory, where the device process reads it (service/shared.py)."""
        buf = self.slots.take(nbytes) if self.slots is not None else None
        return buf if buf is not None else np.empty(nbytes, dtype=np.uint8)

    async def out_shapes(self, shapes: list[tuple[int, ...]]) -> list[tuple[int, ...] | None]:
        key = tuple(shapes)
        out = self._shapes.get(key)
        if out is None:
            out = self._shapes.put(key, await _ask(self.link, self.spec.name, "shapes", shapes))
        return out

    async def metrics(self) -> bytes:
        """The device process's series (batching, inference time, parity) in Prometheus' text format."""
        return await _ask(self.link, self.spec.name, "metrics")

    def close(self) -> None:
        self.link.close()


# Errors that are about the queue or the device process, not the inputs: a group that gets one gives it to
# every member. Any other (out of memory, a model's error) sends the members again one by one, so only the
# request that caused it fails, as the device process's own batcher does within a batch.
_GROUP_WIDE = (errors.QueueFull, errors.RequestTimeout, errors.ModelNotReady, errors.ClientClosedRequest)


@dataclass
class _Request:
    inputs: list[torch.Tensor]
    timeout_s: float
    future: asyncio.Future
    rows: int = 0


class RemoteBatcher:
    """Stands where DataPlane keeps its Batcher: the device process batches what every front end sends.

    The requests this front end decodes in one turn of its event loop that could share a batch go in one
    call, concatenated along the batch dimension and split back here. The device process's work is per
    call (a frame each way, a queue entry, a future, a deadline) and it is the one process every front end
    shares, so this is where its requests per second come from; the forward and every answer are the
    same as one call per request, since the device process would have concatenated them the same way."""

    def __init__(self, link: Link, model: str, max_rows: int, calls=None, slots: FrontSlots | None = None):
        self.link = link
        self.slots = slots
        self.model = model
        self.max_rows = max_rows  # 1: every request its own call (batching is off, or the model cannot batch)
        self._calls = calls  # a histogram of requests per call (metrics.frontend_calls), or None
        self._turn: list[_Request] = []

    def arriving(self):
        # The device process cannot see a request being read here; it batches what has reached it.
        return contextlib.nullcontext()

    async def submit(self, inputs: list[torch.Tensor], timeout_s: float = 0.0) -> tuple[list[torch.Tensor], float]:
        """As Batcher.submit; the deadline is kept by the device process, which answers 504 on it."""
        loop = asyncio.get_running_loop()
        if not self._turn:
            loop.call_soon(self._send_turn)  # after every handler this turn has resumed
        request = _Request(inputs, timeout_s, loop.create_future())
        self._turn.append(request)
        return await request.future

    def _send_turn(self) -> None:
        turn, self._turn = self._turn, []
        groups: dict[tuple, tuple[list[_Request], list[int]]] = {}  # key -> (members, [rows])
        for r in turn:
            if r.future.done():  # its handler was cancelled before the turn ended
                continue
            key = batch_key(r.inputs) if self.max_rows > 1 else None
            if key is None:
                self._send([r])
                continue
            r.rows = r.inputs[0].shape[0]
            members, rows = groups.setdefault((key, r.timeout_s), ([], [0]))
            if members and rows[0] + r.rows > self.max_rows:
                self._send(members)
                members, rows = groups[(key, r.timeout_s)] = ([], [0])
            members.append(r)
            rows[0] += r.rows
        for members, _ in groups.values():
            self._send(members)

    def _send(self, group: list[_Request]) -> None:
        if self._calls is not None:
            self._calls.observe(len(group))
        try:
            inputs = group[0].inputs if len(group) == 1 else [torch.cat(p) for p in zip(*(r.inputs for r in group))]
            call = self.link.call("infer", ([pack(t, self.slots) for t in inputs], group[0].timeout_s))
        except Exception as exc:  # a callback of the loop: nothing above it would answer the handlers
            self._fail(group, exc)
            return
        call.add_done_callback(lambda done: self._answer(group, done))

    def _answer(self, group: list[_Request], done: asyncio.Future) -> None:
        try:
            outputs, seconds = done.result()
            outputs = unpack_answer(outputs, self.slots)
            parts = [outputs] if len(group) == 1 else split_rows(outputs, [r.rows for r in group])
        except Exception as exc:
            err = local_error(exc, self.model)
            if len(group) > 1 and not isinstance(err, _GROUP_WIDE):
                for r in group:  # one member may be what failed: alone, only it fails
                    if not r.future.done():
                        self._send([r])
                return
            self._fail(group, err)
            return
        for r, mine in zip(group, parts):
            if not r.future.done():  # its handler may have gone (cancelled)
                r.future.set_result((mine, seconds))

    @staticmethod
    def _fail(group: list[_Request], exc: BaseException) -> None:
        for r in group:
            if not r.future.done():
                r.future.set_exception(exc)

    def close(self) -> None:
        """Nothing is queued here: the device process's batcher holds the requests (the link is the runtime's)."""


class RemoteHealth:
    """Stands where DataPlane keeps its HealthCheck: /health reruns parity in the device process."""

    def __init__(self, link: Link, model: str):
        self.link = link
        self.model = model

    async def run(self) -> dict[str, Any]:
        return await _ask(self.link, self.model, "health")


async def connect(sock, flags, max_batch_size: int, calls=None) -> tuple[RemoteRuntime, RemoteBatcher, RemoteHealth]:
    """Opens the link and waits for the device process's card (it sends it once its model has loaded
    and passed or failed parity); raises StartupError when the device process could not start. ``calls``:
    the histogram of requests per call to the device process (RemoteBatcher)."""
    from .runtime import StartupError

    segment = shared.receive(sock)  # before the link reads the socket: the parent's first message
    slots = FrontSlots(segment) if segment is not None else None
    link = await Link.open(sock, on_lost=lambda exc: log.error("the link to the device process is lost (%s)", exc))
    try:
        card = await link.call("hello")
    except RemoteError as exc:
        link.close()
        raise StartupError(f"the device process did not start: {exc.message}") from None
    except LinkClosed:
        raise StartupError("the device process stopped before its model was loaded") from None
    batcher = RemoteBatcher(link, card.name, max_batch_size if can_batch(card.inputs, card.outputs) else 1, calls,
                            slots)
    return RemoteRuntime(card, link, flags, slots), batcher, RemoteHealth(link, card.name)
