"""The served model on its device: loading, swapping, forward passes and parity.

Every forward (requests and parity checks alike) runs on one worker thread under
``torch.inference_mode()``: the event loop never blocks on the device, and
requests reach the device one at a time, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np
import torch

import models

from .errors import DeviceOutOfMemory
from .graphs import CudaGraphs
from .settings import Settings

log = logging.getLogger("convt.runtime")

# Request bodies up to this size are read into pinned memory on a CUDA server. torch's pinned cache keeps
# what it hands out (rounded up to a power of two) for reuse, so a cap bounds what a full queue of large
# bodies could lock: above it a body is pageable and pinned once on the device thread, as before.
PIN_BODY_MAX = 4 << 20
# Below this a body is pageable: a small input is copied into the batch's pinned buffer anyway (or pinned
# on the device thread when it runs alone), and a pinned block costs the event loop more than the copy.
PIN_BODY_MIN = 64 << 10


class StartupError(RuntimeError):
    """The server cannot serve its model at all (bad model, weights or device)."""


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    # CPU allocations that fail raise a plain RuntimeError from c10's allocator
    return isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc)


def split_rows(outputs: list[torch.Tensor], rows: list[int]) -> list[list[torch.Tensor]]:
    """A batch's outputs back per request, ``rows[i]`` rows each (views along the batch dimension)."""
    per_output = [o.split(rows) for o in outputs]
    return [[parts[i] for parts in per_output] for i in range(len(rows))]


def _load_kernels() -> dict[str, Any]:
    log.info("loading the convt kernels (the first start on a machine builds them, which takes minutes)")
    t0 = time.perf_counter()
    import kernels

    info = kernels.build_info()
    log.info("kernels ready in %.1f s: backends %s, from cache %s, build dir %s%s", time.perf_counter() - t0,
             info["backends"], info["from_cache"], info["build_dir"],
             f", skipped {info['skipped']}" if info["skipped"] else "")
    return info


def _check_device(device: torch.device, info: dict[str, Any]) -> None:
    if device.type != "cuda":
        return
    if not torch.cuda.is_available():
        raise StartupError(f"device {device} requested but torch sees no CUDA device; use --device cpu or auto")
    if "cuda" not in info["backends"]:
        raise StartupError(f"device {device} requested but the CUDA kernel is not built: {info['skipped'].get('cuda')}")
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise StartupError(f"device {device} requested but only {torch.cuda.device_count()} CUDA devices exist")


class Runtime:
    def __init__(self, spec: models.ModelSpec, device: torch.device, dtype: torch.dtype,
                 tolerances: dict[str, float], layers: list[dict[str, Any]], kernel_info: dict[str, Any],
                 graph_shapes: int = 0):
        self.spec = spec
        self.device = device
        self.dtype = dtype
        self.tolerances = tolerances
        self.layers = layers
        self.kernel_info = kernel_info
        self.ready = False
        # The thread's current CUDA device is its own, cuda:0 until set: anything that
        # takes the current device (pinned host buffers) would open a context on GPU 0
        # from a worker serving cuda:1.
        pin = (lambda: torch.cuda.set_device(device)) if device.type == "cuda" and device.index is not None else None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="convt-infer", initializer=pin)
        self.graphs = CudaGraphs(spec.module, graph_shapes if device.type == "cuda" and spec.graph_safe else 0)

    @classmethod
    def load(cls, settings: Settings) -> "Runtime":
        """Blocking: kernels, model, weights, device and dtype, eval, swap."""
        info = _load_kernels()
        device, dtype = settings.torch_device(), settings.torch_dtype()
        _check_device(device, info)
        try:
            spec = models.load_model(settings.model, settings.weights)
        except models.ModelLoadError as exc:
            raise StartupError(str(exc)) from exc
        log.info("model %s built (%s); weights: %s", spec.name, spec.description or "no description",
                 spec.weights.get("path") or spec.weights.get("note"))
        module = spec.module.to(device=device, dtype=dtype).eval()
        import kernels

        layers = kernels.swap_conv_transpose2d(module)
        if not layers:
            log.warning("model %s has no ConvTranspose2d: nothing runs on our kernel", spec.name)
        for layer in layers:
            log.info("swapped layer %r: %s", layer["name"], {k: v for k, v in layer.items() if k != "name"})
        log.info("serving %s on %s as %s", spec.name, device, dtype)
        return cls(spec, device, dtype, dict(settings.parity_tolerance), layers, info, settings.cuda_graph_shapes)

    async def out_shapes(self, shapes: list[tuple[int, ...]]) -> list[tuple[int, ...] | None]:
        """The outputs' shapes for these input shapes (None where unknown before running); ShapeError
        for inputs the model cannot take."""
        return self.spec.check_shapes(shapes)

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        return tuple(t.to(device=self.device, dtype=self.dtype if t.is_floating_point() else t.dtype)
                     for t in self.spec.example_inputs)

    def _guarded(self, fn: Callable[[], Any]) -> Any:
        """What every forward runs under, for requests and parity alike.

        The worker thread's current CUDA device is its own (cuda:0 unless set),
        so a worker serving cuda:1 makes it cuda:1 for the allocations and
        streams that ops take from the current device.
        """
        on_device = torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext()
        with torch.inference_mode(), on_device:
            return fn()

    def host_buffer(self, nbytes: int) -> np.ndarray:
        """A uint8 buffer for a request body: pinned on a CUDA server (PIN_BODY_MIN to PIN_BODY_MAX bytes), so
        that an input that is a view of it is copied to the device straight from it (``_to_device``)."""
        if self.device.type != "cuda" or not PIN_BODY_MIN <= nbytes <= PIN_BODY_MAX:
            return np.empty(nbytes, dtype=np.uint8)
        with torch.cuda.device(self.device):  # the event loop's current device may be another GPU
            return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True).numpy()  # the array holds the tensor

    def _to_device(self, x: torch.Tensor) -> torch.Tensor:
        if self.device.type != "cuda":
            return x
        # From pinned memory the copy is a true asynchronous DMA on the current stream.
        return (x if x.is_pinned() else x.pin_memory()).to(self.device, non_blocking=True)

    def _cat(self, parts: tuple[torch.Tensor, ...]) -> torch.Tensor:
        # On a CUDA server straight into pinned memory: the one host copy a batch needs.
        out = torch.empty((sum(p.shape[0] for p in parts), *parts[0].shape[1:]), dtype=parts[0].dtype,
                          pin_memory=self.device.type == "cuda")
        return torch.cat(parts, out=out)

    def _to_host(self, y: torch.Tensor) -> torch.Tensor:
        if y.device.type != "cuda":
            return y
        host = torch.empty(y.shape, dtype=y.dtype, pin_memory=True)
        return host.copy_(y, non_blocking=True)

    def _model(self, xs: list[torch.Tensor]) -> Any:
        out = self.graphs.run(xs, self.device)
        if out is None:
            out = self.spec.module(*[self._to_device(x) for x in xs])
        return out

    def _to_hosts(self, outs: list[torch.Tensor], host: Callable | None) -> list[torch.Tensor]:
        dst = host([(o.dtype, tuple(o.shape)) for o in outs]) if host is not None else None
        if dst is None:
            return [self._to_host(o) for o in outs]
        for d, o in zip(dst, outs):
            d.copy_(o, non_blocking=True)
        return dst

    def _forward(self, requests: list[list[torch.Tensor]],
                 hosts: list[Callable | None] | None = None) -> tuple[list[list[torch.Tensor]], float]:
        """One forward pass for one or more requests: their inputs are concatenated
        along the batch dimension here, on the worker thread, and the outputs split
        back, so the event loop never copies tensors."""
        t0 = time.perf_counter()
        try:
            joined = requests[0] if len(requests) == 1 else [self._cat(parts) for parts in zip(*requests)]
            out = self._guarded(lambda: self._model(joined))
            outs = [out] if isinstance(out, torch.Tensor) else list(out)
            rows = [r[0].shape[0] for r in requests]
            placed = hosts is not None and any(h is not None for h in hosts)
            if placed:  # per request, each where its host says
                per = [outs] if len(requests) == 1 else split_rows(outs, rows)
                host = [self._to_hosts(p, h) for p, h in zip(per, hosts)]
            else:
                host = [self._to_host(o) for o in outs]
            if self.device.type == "cuda":
                torch.cuda.current_stream(self.device).synchronize()
            if placed:
                return host, time.perf_counter() - t0
            if len(requests) == 1:
                return [host], time.perf_counter() - t0
            return split_rows(host, rows), time.perf_counter() - t0
        except Exception as exc:
            if not _is_oom(exc):
                raise
        # Out of memory: raised outside the except block so that no traceback
        # keeps this frame's tensors alive while the cache is freed.
        joined = out = outs = host = per = None
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        raise DeviceOutOfMemory(f"{self.device} ran out of memory for this request; the server freed it and "
                                f"keeps serving: retry with a smaller batch")

    async def infer_batch(self, requests: list[list[torch.Tensor]], hosts: list[Callable | None] | None = None
                          ) -> tuple[list[list[torch.Tensor]], float]:
        """Each request's outputs (on the CPU) and the seconds the shared forward took. ``hosts[i]``, where
        given, is asked on the device thread for request i's outputs' host tensors ((dtype, shape) each ->
        tensors, or None for pinned memory): the device process's shared segment (service/shared.py)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._forward, requests, hosts)

    async def infer(self, inputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], float]:
        """Outputs (on the CPU) of one request and the seconds the forward took."""
        outs, seconds = await self.infer_batch([inputs])
        return outs[0], seconds

    def _parity(self) -> dict[str, Any]:
        import kernels

        return kernels.check_parity(self.spec.module, self.example_inputs(), tolerances=self.tolerances,
                                    run=self._guarded)

    async def parity(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._parity)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
