"""CUDA-graph capture of the served model's forward, one graph per input shape.

A small model's forward is launch-bound: every op is a Python call that lets go
of the GIL and takes it back, then queues a kernel. On a busy server each
take-back waits for the event loop: dcgan's forward at batch 30 takes 0.86 ms
alone on an H100 and 3.3 ms inside a server at concurrency 64
(bench/runtime_forward.py, docs/load-test.md). A captured graph replays all of
its kernels with one launch.

A shape (batch included) is captured the first time it is seen, up to a limit
of shapes and of input bytes. The graphs share one memory pool: they replay one
at a time on the device thread's stream, and each output is copied out
(``Runtime._to_host``) before the next replay is queued behind it, so one
graph's scratch memory overwriting another's never reaches a caller.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

log = logging.getLogger("convt.runtime")

# Larger batches amortise the launches anyway, and every captured shape keeps its inputs and outputs allocated:
# once those hold MAX_HELD_BYTES of device memory no new shape is captured (a client sending many shapes of a
# model with large outputs would otherwise pin up to the shape limit times its largest output).
MAX_INPUT_BYTES = 4 << 20
MAX_HELD_BYTES = 256 << 20


def _nbytes(tensors: Any) -> int:
    if isinstance(tensors, torch.Tensor):
        return tensors.numel() * tensors.element_size()
    return sum(_nbytes(t) for t in tensors) if isinstance(tensors, (list, tuple)) else 0


@dataclass
class _Captured:
    inputs: list[torch.Tensor]
    outputs: Any
    graph: torch.cuda.CUDAGraph


class CudaGraphs:
    def __init__(self, module: nn.Module, limit: int):
        self.module = module
        self.limit = limit
        self.failed: str | None = None  # why capture stopped: the model cannot be captured
        self._graphs: dict[tuple, _Captured] = {}
        self._pool = None
        self.held_bytes = 0  # the captured graphs' input and output buffers

    @property
    def shapes(self) -> int:
        return len(self._graphs)

    def run(self, xs: list[torch.Tensor], device: torch.device) -> Any | None:
        """The module's output for these (host) inputs, replayed from a graph; None where this shape is not
        and will not be captured, for the caller to run the module op by op. Call on the device thread, under
        inference mode, with ``device`` current."""
        if not self.limit or self.failed:
            return None
        key = tuple((tuple(x.shape), x.dtype) for x in xs)
        g = self._graphs.get(key)
        if g is None:
            if (len(self._graphs) >= self.limit or self.held_bytes >= MAX_HELD_BYTES
                    or _nbytes(xs) > MAX_INPUT_BYTES):
                return None
            g = self._capture(xs, device)
            if g is None:
                return None
            self._graphs[key] = g
            self.held_bytes += _nbytes(g.inputs) + _nbytes(g.outputs)
            log.info("captured a CUDA graph of the forward for input shapes %s (%d of at most %d)",
                     [list(x.shape) for x in xs], len(self._graphs), self.limit)
        for static, x in zip(g.inputs, xs):
            static.copy_(x, non_blocking=True)
        g.graph.replay()
        return g.outputs

    def _capture(self, xs: list[torch.Tensor], device: torch.device) -> _Captured | None:
        static = [torch.empty(x.shape, dtype=x.dtype, device=device) for x in xs]
        for s, x in zip(static, xs):
            s.copy_(x)
        # Warm-up outside the capture: the first calls pick each layer's kernel (and may time them). An error
        # here is the model's answer to these inputs, raised as running it op by op would raise it.
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(2):
                self.module(*static)
        torch.cuda.current_stream(device).wait_stream(side)
        try:
            graph = torch.cuda.CUDAGraph()
            # thread_local: the event loop's thread may allocate pinned body buffers meanwhile, which the
            # default (global) mode would refuse for the whole process during the capture
            with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
                out = self.module(*static)
        except torch.OutOfMemoryError:
            raise
        except Exception as exc:  # an op that syncs with the host, or is not capturable: run op by op
            self.failed = f"{type(exc).__name__}: {str(exc)[:300]}"
            log.warning("capturing a CUDA graph of the forward failed (%s); forward passes run op by op from now on",
                        self.failed)
            return None
        if self._pool is None:
            self._pool = graph.pool()
        return _Captured(static, out, graph)
