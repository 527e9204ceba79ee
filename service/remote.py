"""A front end's view of the model served by the device process (``--frontends``).

The device process owns the model, the batcher and the parity check; a front end
holds what answering HTTP needs locally: the model's card (names, shapes,
datatypes, provenance) and the output shapes it has already been told, and hands
decoded tensors over the link. What the device process raises comes back as the
same service error, so a front end answers exactly as a single process would.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import models

from . import errors
from .bounded import Bounded
from .link import Link, LinkClosed, RemoteError

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


def pack(t: torch.Tensor) -> tuple[bool, np.ndarray]:
    """A tensor as it crosses the link: numpy has no bfloat16, so its bits go as int16."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return True, t.view(torch.int16).numpy()
    return False, t.numpy()


def unpack(item: tuple[bool, np.ndarray]) -> torch.Tensor:
    bf16, array = item
    t = torch.from_numpy(array)
    return t.view(torch.bfloat16) if bf16 else t


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

    def __init__(self, card: ModelCard, link: Link, flags):
        self.spec = card
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
        return np.empty(nbytes, dtype=np.uint8)  # pinned memory is the device process's business

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


class RemoteBatcher:
    """Stands where DataPlane keeps its Batcher: the device process batches what every front end sends."""

    def __init__(self, link: Link, model: str):
        self.link = link
        self.model = model

    def arriving(self):
        # The device process cannot see a request being read here; it batches what has reached it.
        return contextlib.nullcontext()

    async def submit(self, inputs: list[torch.Tensor], timeout_s: float = 0.0) -> tuple[list[torch.Tensor], float]:
        """As Batcher.submit; the deadline is kept by the device process, which answers 504 on it."""
        outputs, seconds = await _ask(self.link, self.model, "infer", ([pack(t) for t in inputs], timeout_s))
        return [unpack(o) for o in outputs], seconds

    def close(self) -> None:
        """Nothing is queued here: the device process's batcher holds the requests (the link is the runtime's)."""


class RemoteHealth:
    """Stands where DataPlane keeps its HealthCheck: /health reruns parity in the device process."""

    def __init__(self, link: Link, model: str):
        self.link = link
        self.model = model

    async def run(self) -> dict[str, Any]:
        return await _ask(self.link, self.model, "health")


async def connect(sock, flags) -> tuple[RemoteRuntime, RemoteBatcher, RemoteHealth]:
    """Opens the link and waits for the device process's card (it sends it once its model has loaded
    and passed or failed parity); raises StartupError when the device process could not start."""
    from .runtime import StartupError

    link = await Link.open(sock, on_lost=lambda exc: log.error("the link to the device process is lost (%s)", exc))
    try:
        card = await link.call("hello")
    except RemoteError as exc:
        link.close()
        raise StartupError(f"the device process did not start: {exc.message}") from None
    except LinkClosed:
        raise StartupError("the device process stopped before its model was loaded") from None
    return RemoteRuntime(card, link, flags), RemoteBatcher(link, card.name), RemoteHealth(link, card.name)
