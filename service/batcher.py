"""Dynamic batching, as Triton's dynamic batcher does it.

Requests whose inputs agree in every dimension but the first (the batch) are
concatenated along it, up to ``max_batch_size`` rows, waiting at most
``max_queue_delay_us`` after the oldest arrived for company, run as one forward
pass and split back per request. With ``max_batch_size`` 1 every request runs
alone, in arrival order. The wait for company is only spent while other
requests are on their way (read or decoded by the handlers, see ``arriving``):
a request that nothing could join runs at once. Either way the queue is bounded: past
``max_queue_size`` waiting requests a new one is refused (429) at once instead
of piling up.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import torch

from . import limits
from .errors import QueueFull
from .metrics import Metrics
from .runtime import Runtime

log = logging.getLogger("convt.batcher")

# Whether the current handler still counts as arriving: a one-item list, shared with the tasks it awaits.
_ARRIVING: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("convt_arriving", default=None)


@dataclass
class _Pending:
    inputs: list[torch.Tensor]
    rows: int
    key: tuple
    future: asyncio.Future
    host: Callable | None = None  # where its outputs go on the host (runtime.infer_batch), None: pinned memory
    arrived: float = field(default_factory=time.perf_counter)


def can_batch(inputs: list, outputs: list) -> bool:
    """Concatenating requests is only sound when every input and output (TensorSpecs) has a free batch
    dimension."""
    return all(s.shape and s.shape[0] == -1 for s in inputs + outputs)


def batch_key(inputs: list[torch.Tensor]) -> tuple | None:
    """What must agree for two requests to share a batch; None if this one cannot batch."""
    if not inputs or any(t.dim() == 0 for t in inputs) or len({t.shape[0] for t in inputs}) != 1:
        return None
    return tuple((tuple(t.shape[1:]), t.dtype) for t in inputs)


class Batcher:
    def __init__(self, runtime: Runtime, metrics: Metrics, max_batch_size: int, max_queue_delay_us: int,
                 max_queue_size: int):
        self.runtime = runtime
        self.metrics = metrics
        batchable = can_batch(runtime.spec.inputs, runtime.spec.outputs)
        self.max_batch_size = max_batch_size if batchable else 1
        if max_batch_size > 1 and not batchable:
            log.warning("model %s has a fixed batch dimension: dynamic batching is off", runtime.spec.name)
        self.delay = max_queue_delay_us / 1e6
        self.max_queue_size = max_queue_size
        self._queue: deque[_Pending] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._arriving = 0  # handlers that started a request and have not queued it (or given up) yet
        self._inference_seconds = metrics.inference.labels(runtime.spec.name)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="convt-batcher")

    def close(self) -> None:
        """Stops batching; requests still queued get 429 (uvicorn has drained in-flight ones by now)."""
        if self._task is not None:
            self._task.cancel()
        for p in self._queue:
            if not p.future.done():
                p.future.set_exception(QueueFull("the server is shutting down"))
        self._queue.clear()

    @property
    def depth(self) -> int:
        return len(self._queue)

    @contextlib.contextmanager
    def arriving(self):
        """Wrapped around a request's handling from its first byte: until it is queued, the batcher
        knows company is on its way and waits (at most the delay) for it."""
        flag = [True]
        token = _ARRIVING.set(flag)
        self._arriving += 1
        try:
            yield
        finally:
            _ARRIVING.reset(token)
            self._left(flag)

    def _left(self, flag: list[bool] | None) -> None:
        if flag and flag[0]:
            flag[0] = False
            self._arriving -= 1
            self._wake.set()  # a batcher waiting for this request stops waiting

    async def submit(self, inputs: list[torch.Tensor], timeout_s: float = 0.0) -> tuple[list[torch.Tensor], float]:
        """This request's outputs and the forward's seconds (of its whole batch); RequestTimeout once
        ``timeout_s`` (0: none) pass before they are ready."""
        return await self.enqueue(inputs, timeout_s)

    def enqueue(self, inputs: list[torch.Tensor], timeout_s: float = 0.0,
                host: Callable | None = None) -> asyncio.Future:
        """``submit`` without the coroutine: the request queued, the future of its answer returned (for
        callers that answer from a done-callback: the device process, per call from a front end). ``host``:
        see ``Runtime.infer_batch``."""
        if len(self._queue) >= self.max_queue_size:
            self.metrics.rejected.labels(self.runtime.spec.name).inc()
            raise QueueFull(f"{len(self._queue)} requests are already waiting (--max-queue-size "
                            f"{self.max_queue_size}); retry shortly")
        key = batch_key(inputs)
        rows = inputs[0].shape[0] if key is not None else 0
        p = _Pending(inputs, rows, key if key is not None else ("alone", id(inputs)),
                     asyncio.get_running_loop().create_future(), host)
        self._queue.append(p)
        self._left(_ARRIVING.get())
        self._wake.set()
        timer = limits.deadline(p.future, timeout_s, self.runtime.spec.name)
        if timer is not None:
            # done, failed, timed out or cancelled (its awaiting handler was): the timer goes either way
            p.future.add_done_callback(lambda _: timer.cancel())
        return p.future

    def _take(self) -> list[_Pending]:
        """The oldest request and the later ones that fit with it, removed from the queue."""
        first = self._queue.popleft()
        batch, rows = [first], first.rows
        if self.max_batch_size <= 1 or first.key[0] == "alone" or rows >= self.max_batch_size:
            return batch
        keep: deque[_Pending] = deque()
        while self._queue:
            p = self._queue.popleft()
            if p.key == first.key and rows + p.rows <= self.max_batch_size:
                batch.append(p)
                rows += p.rows
            else:
                keep.append(p)
        self._queue.extendleft(reversed(keep))
        return batch

    def _rows_waiting(self, key: tuple) -> int:
        return sum(p.rows for p in self._queue if p.key == key)

    async def _run(self) -> None:
        while True:
            if not self._queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            first = self._queue[0]
            if self.max_batch_size > 1 and first.key[0] != "alone":
                # Wait for company until the oldest has waited the delay, a batch is full or no one else is coming.
                while self._arriving and self._rows_waiting(first.key) < self.max_batch_size:
                    left = first.arrived + self.delay - time.perf_counter()
                    if left <= 0:
                        break
                    self._wake.clear()
                    try:
                        await asyncio.wait_for(self._wake.wait(), left)
                    except asyncio.TimeoutError:
                        break
            batch = [p for p in self._take() if not p.future.done()]  # timed out or cancelled: dropped
            if batch:
                await self._execute(batch)

    async def _execute(self, batch: list[_Pending]) -> None:
        name = self.runtime.spec.name
        self.metrics.batch_size.labels(name).observe(sum(p.rows for p in batch))
        try:
            results, seconds = await self.runtime.infer_batch([p.inputs for p in batch], [p.host for p in batch])
        except Exception as exc:
            if len(batch) == 1:
                if not batch[0].future.done():
                    batch[0].future.set_exception(exc)
                return
            # One request may be what failed (too large for the device, values the model refuses): alone,
            # only it fails, and its batch-mates get their answers.
            log.info("a batch of %d requests failed (%s: %s); running them one at a time", len(batch),
                     type(exc).__name__, exc)
            for p in batch:
                if not p.future.done():
                    await self._execute([p])
            return
        for p, r in zip(batch, results):
            if not p.future.done():
                self._inference_seconds.observe(seconds)
                p.future.set_result((r, seconds))
