"""The data plane: owns the served model and answers the v2 protocol's questions.

HTTP handlers hand it names and bodies; it returns protocol objects or raises
the domain errors of errors.py.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import models

from . import codec, limits, remote
from .batcher import Batcher
from .bounded import Bounded
from .errors import InvalidRequest, ModelNotFound, ModelNotReady
from .group import WorkerGroup
from .health import HealthCheck
from .metrics import Metrics
from .protocol import InferenceRequest, ModelMetadata, RequestInput, TensorMetadata
from .remote import RemoteBatcher, RemoteHealth, RemoteRuntime
from .runtime import Runtime
from .settings import Settings

log = logging.getLogger("convt.dataplane")

MODEL_VERSION = "1"


# Binary requests of one shape from one client carry the same JSON header byte for byte: its parse and
# checks are kept per header (the tensors' bytes come after it and are decoded every time). Bounded, so
# that headers which never repeat (a fresh id each request) only ever cost their own parse.
PLAN_HEADER_MAX = 4096
PLANS_MAX = 256


@dataclass(frozen=True)
class _Plan:
    request: InferenceRequest  # never changed once planned: the codec only reads it
    ordered: list[RequestInput]
    wanted: list[tuple[str, bool]]


@dataclass
class InferResult:
    body: bytes | list[bytes | memoryview]  # a list: the pieces of a binary body, in order
    header_length: int | None  # set when the body carries binary outputs
    compute_seconds: float = 0.0  # the forward pass that served it (its whole batch)
    stages: dict[str, float] = field(default_factory=dict)  # seconds per stage, for the Server-Timing header


class DataPlane:
    """With ``link`` (a front end of ``--frontends``), the model, batcher and parity check are the device
    process's, reached through service/remote.py; without, they are this process's own."""

    def __init__(self, settings: Settings, metrics: Metrics, group: WorkerGroup | None = None, link=None):
        self.settings = settings
        self.metrics = metrics
        self.group = group or WorkerGroup()
        self.link = link  # this front end's socket to the device process
        self.runtime: Runtime | RemoteRuntime | None = None
        self.health: HealthCheck | RemoteHealth | None = None
        self.batcher: Batcher | RemoteBatcher | None = None
        self._plans = Bounded(PLANS_MAX)  # header bytes -> _Plan

    async def start(self) -> None:
        """Load, swap and check parity (or reach the device process that did); raises StartupError
        when it cannot serve at all."""
        import asyncio

        if self.link is not None:
            self.runtime, self.batcher, self.health = await remote.connect(
                self.link, self.group.flags, self.settings.max_batch_size, self.metrics.frontend_calls)
            self.metrics.describe_worker(self.group, self.runtime.device)
            log.info("front end %d: model %s served by the device process on %s", self.group.index,
                     self.runtime.spec.name, self.runtime.device)
            return
        self.runtime = await asyncio.to_thread(Runtime.load, self.settings)
        s = self.settings
        self.batcher = Batcher(self.runtime, self.metrics, s.max_batch_size, s.max_queue_delay_us, s.max_queue_size)
        self.batcher.start()
        self.metrics.queue_depth.set_function(lambda: self.batcher.depth)
        self.metrics.describe_worker(self.group, str(self.runtime.device))
        self.health = HealthCheck(self.runtime, self.metrics, MODEL_VERSION, on_result=self.group.publish)
        report = await self.health.run()
        if report["passed"]:
            log.info("model %s is ready", self.runtime.spec.name)
        else:
            log.error("model %s is NOT ready: parity failed (%s); the server stays up, /health reruns the check",
                      self.runtime.spec.name, ", ".join(report["failed"]) or report.get("error"))

    def close(self) -> None:
        if self.link is None:  # a front end's readiness is the device process's to publish
            self.group.publish(False)  # a worker going away takes the group out of rotation
        if self.batcher is not None:
            self.batcher.close()
        if self.runtime is not None:
            self.runtime.close()

    @property
    def ready(self) -> bool:
        """This worker's model passed parity, and so did every other worker's."""
        return self.runtime is not None and self.group.all_ready(self.runtime.ready)

    def model(self, name: str, version: str | None = None) -> Runtime:
        rt = self.runtime
        if rt is None or name != rt.spec.name:
            served = [rt.spec.name] if rt else []
            raise ModelNotFound(f"unknown model {name!r}; this server serves {served}")
        if version is not None and version != MODEL_VERSION:
            raise ModelNotFound(f"model {name!r} has no version {version!r}; versions: [{MODEL_VERSION!r}]")
        return rt

    def _datatype(self, rt: Runtime, spec: models.TensorSpec) -> str:
        return codec.datatype_of(spec.dtype or rt.dtype)

    def metadata(self, name: str, version: str | None = None) -> ModelMetadata:
        rt = self.model(name, version)
        return ModelMetadata(
            name=rt.spec.name, versions=[MODEL_VERSION], platform=rt.spec.platform,
            inputs=[TensorMetadata(name=s.name, datatype=self._datatype(rt, s), shape=list(s.shape)) for s in rt.spec.inputs],
            outputs=[TensorMetadata(name=s.name, datatype=self._datatype(rt, s), shape=list(s.shape)) for s in rt.spec.outputs],
            parameters={"description": rt.spec.description, "weights": rt.spec.weights, "device": str(rt.device),
                        "dtype": str(rt.dtype).removeprefix("torch."),
                        "layers_on_convt_kernel": [layer["name"] for layer in rt.layers]},
        )

    async def infer(self, name: str, version: str | None, body: bytes, header_length: str | None) -> InferResult:
        t0 = time.perf_counter()
        rt = self.model(name, version)
        if not rt.ready:
            raise ModelNotReady(f"model {name!r} is not ready: its parity check failed; GET /health for the report")
        header, tail = codec.split_body(body, header_length)
        plan = self._plans.get(header) if header_length is not None else None
        if plan is None:
            plan = await self._plan(rt, header)
            if header_length is not None and len(header) <= PLAN_HEADER_MAX:
                self._plans.put(header, plan)
        chunks = codec.slice_binary(plan.request.inputs, tail)
        tensors = [codec.decode_input(i, chunks.get(i.name)) for i in plan.ordered]
        t1 = time.perf_counter()
        outputs, seconds = await self.batcher.submit(tensors, self.settings.request_timeout_s)
        t2 = time.perf_counter()
        by_name = {spec.name: t for spec, t in zip(rt.spec.outputs, outputs)}
        header_out: dict[str, Any] = {"model_name": rt.spec.name, "model_version": MODEL_VERSION}
        if plan.request.id is not None:
            header_out["id"] = plan.request.id
        body_out, length = codec.encode_response(header_out, [(n, by_name[n], b) for n, b in plan.wanted], parts=True)
        # queue: from the hand-off to the batcher until the handler resumes, less the forward (waiting for
        # company, for the device thread, and the hops to it and back)
        return InferResult(body_out, length, seconds, {"decode": t1 - t0, "queue": max(0.0, t2 - t1 - seconds),
                                                       "encode": time.perf_counter() - t2})

    async def device_metrics(self) -> bytes:
        """The device process's series for /metrics; none in a process that serves its own model."""
        if self.link is None or self.runtime is None:
            return b""
        return await self.runtime.metrics()

    async def _plan(self, rt: Runtime, header: bytes) -> "_Plan":
        """Everything a request's JSON header decides, checked: the parsed request, its inputs in the
        model's order and the outputs it wants. Raises the request's 4xx error."""
        request = codec.parse_request(header)
        ordered = self._match_inputs(rt, request.inputs)
        limits.check_tensor_elements(ordered, self.settings.max_tensor_elements)  # before any decoding
        try:
            out_shapes = await rt.out_shapes([tuple(i.shape) for i in ordered])
        except models.ShapeError as exc:
            raise InvalidRequest(str(exc)) from None
        self._check_output_size(rt, out_shapes)
        return _Plan(request, ordered, self._wanted_outputs(rt, request))

    def _match_inputs(self, rt: Runtime, inputs: list[RequestInput]) -> list[RequestInput]:
        """The request's inputs in the model's order, each with the model's datatype."""
        expected = {s.name: s for s in rt.spec.inputs}
        given: dict[str, RequestInput] = {}
        for inp in inputs:
            if inp.name not in expected:
                raise InvalidRequest(f"unknown input {inp.name!r}; model {rt.spec.name!r} takes {list(expected)}")
            if inp.name in given:
                raise InvalidRequest(f"input {inp.name!r} appears more than once")
            given[inp.name] = inp
        missing = [n for n in expected if n not in given]
        if missing:
            raise InvalidRequest(f"missing input(s) {missing}; model {rt.spec.name!r} takes {list(expected)}")
        for name, spec in expected.items():
            want = self._datatype(rt, spec)
            if given[name].datatype != want:
                raise InvalidRequest(f"input {name!r} has datatype {given[name].datatype!r}; model {rt.spec.name!r} "
                                     f"takes {want} (it is served in {str(rt.dtype).removeprefix('torch.')})")
        return [given[n] for n in expected]

    def _check_output_size(self, rt: Runtime, out_shapes: list[tuple[int, ...] | None]) -> None:
        total = sum(models.numel(s) * (spec.dtype or rt.dtype).itemsize
                    for s, spec in zip(out_shapes, rt.spec.outputs) if s is not None)
        limit = self.settings.max_output_bytes
        if total > limit:
            shapes = [list(s) for s in out_shapes if s is not None]
            raise InvalidRequest(f"the output for these inputs would be {total} bytes (shapes {shapes}); the limit is "
                                 f"{limit} bytes (--max-output-bytes): send a smaller batch or input")

    def _wanted_outputs(self, rt: Runtime, request) -> list[tuple[str, bool]]:
        default, per_output = codec.wants_binary(request)
        names = [s.name for s in rt.spec.outputs]
        if request.outputs is None:
            return [(n, default) for n in names]
        seen = set()
        for out in request.outputs:
            if out.name not in names:
                raise InvalidRequest(f"unknown output {out.name!r}; model {rt.spec.name!r} has outputs {names}")
            if out.name in seen:
                raise InvalidRequest(f"output {out.name!r} is requested more than once")
            seen.add(out.name)
        return [(out.name, per_output[out.name]) for out in request.outputs]
