"""Prometheus metrics: requests and latency by endpoint and status, inference
time, and the last parity result.

Each app owns its registry, so that two apps in one process (tests) do not
collide on metric names.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COUNT_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # rows per forward, requests per call
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Metrics:
    """``http``: requests and latency by endpoint, and which worker answers; ``device``: batching,
    inference time, parity and readiness. A process that serves its own model keeps both; with
    ``--frontends`` each front end keeps the first (and ``frontend``: how it groups its calls to the
    device process) and the device process the second, and a front end's /metrics appends the device
    process's (the two sets share no name)."""

    def __init__(self, http: bool = True, device: bool = True, frontend: bool = False) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = self.latency = self.worker = self.workers_ready = None
        self.inference = self.batch_size = self.rejected = self.queue_depth = None
        self.parity_passed = self.parity_timestamp = self.parity_rel_error = self.parity_runs = self.ready = None
        if http:
            self.requests = Counter("convt_requests", "HTTP requests by endpoint, method and status",
                                    ["endpoint", "method", "status"], registry=r)
            self.latency = Histogram("convt_request_duration_seconds", "HTTP request latency by endpoint and status",
                                     ["endpoint", "method", "status"], buckets=LATENCY_BUCKETS, registry=r)
            self.worker = Gauge("convt_worker_info", "The worker process that answers this scrape (value 1)",
                                ["worker", "workers", "device", "pid"], registry=r)
            self.workers_ready = Gauge("convt_workers_ready", "Workers of this server whose last parity check "
                                                              "passed", registry=r)
        self.frontend_calls = None
        if frontend:
            self.frontend_calls = Histogram("convt_frontend_requests_per_call",
                                            "Requests this front end sent to the device process in one call "
                                            "(--frontends: a turn's requests that could share a batch go together)",
                                            buckets=COUNT_BUCKETS, registry=r)
        if device:
            self.inference = Histogram("convt_inference_seconds", "Model forward time on the device (per request)",
                                       ["model"], buckets=LATENCY_BUCKETS, registry=r)
            self.batch_size = Histogram("convt_batch_size", "Rows per forward pass (dynamic batching)", ["model"],
                                        buckets=COUNT_BUCKETS, registry=r)
            self.rejected = Counter("convt_queue_rejected", "Requests refused with 429 because the queue was full",
                                    ["model"], registry=r)
            self.queue_depth = Gauge("convt_queue_depth", "Requests waiting for the device", registry=r)
            self.parity_passed = Gauge("convt_parity_passed", "1 if the last parity check passed, else 0",
                                       ["model"], registry=r)
            self.parity_timestamp = Gauge("convt_parity_last_run_timestamp_seconds",
                                          "When the last parity check ended", ["model"], registry=r)
            self.parity_rel_error = Gauge("convt_parity_rel_error", "Relative error per layer in the last parity "
                                                                    "check", ["model", "layer"], registry=r)
            self.parity_runs = Counter("convt_parity_runs", "Parity checks run (shared /health calls count once)",
                                       ["model"], registry=r)
            self.ready = Gauge("convt_model_ready", "1 while the model is ready to serve", ["model"], registry=r)
        # labels() takes a lock and builds its key on every call; the label sets are few (templates x
        # methods x statuses), so count_request looks their series up once
        self._series: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    def describe_worker(self, group, device: str) -> None:
        if self.worker is None:
            return
        self.worker.labels(str(group.index), str(group.count), device, str(group.pid)).set(1)
        # read at scrape time: the peers' flags change without this worker knowing
        self.workers_ready.set_function(lambda: sum(group.peers_ready()))

    def record_parity(self, model: str, report: dict[str, Any]) -> None:
        self.parity_runs.labels(model).inc()
        self.parity_passed.labels(model).set(1 if report.get("passed") else 0)
        self.parity_timestamp.labels(model).set(time.time())
        checks = list(report.get("layers") or []) + ([report["model"]] if report.get("model") else [])
        for check in checks:
            if check.get("rel_error") is not None:
                self.parity_rel_error.labels(model, check["name"] or "<root>").set(check["rel_error"])

    def count_request(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        labels = (endpoint, method, str(status))
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = (self.requests.labels(*labels), self.latency.labels(*labels))
        series[0].inc()
        series[1].observe(seconds)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class MetricsMiddleware:
    """Counts every HTTP request under its route template (not the raw path, so
    a client cannot grow the label set)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # what the client gets when the app raises before responding
        t0 = time.perf_counter()

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or "unmatched"
            self.metrics.count_request(endpoint, scope.get("method", ""), status, time.perf_counter() - t0)
