"""/health: the parity check rerun now, on fresh random inputs, through the path
that serves requests.

Concurrent callers share the run in flight. The result sets the model's
readiness, so a server whose kernel starts to disagree with PyTorch stops
taking traffic, and one that passes again resumes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime, timezone
from typing import Any, Callable

from .metrics import Metrics
from .runtime import Runtime

log = logging.getLogger("convt.health")


class HealthCheck:
    def __init__(self, runtime: Runtime, metrics: Metrics, version: str,
                 on_result: Callable[[bool], None] = lambda passed: None):
        self.runtime = runtime
        self.on_result = on_result
        self.metrics = metrics
        self.version = version
        self.runs = 0
        self.last: dict[str, Any] | None = None
        self._inflight: asyncio.Task | None = None

    async def run(self) -> dict[str, Any]:
        """The report of the run in flight, or of a new one when none is."""
        if self._inflight is None or self._inflight.done():
            self._inflight = asyncio.get_running_loop().create_task(self._run_once())
        # shield: a caller that disconnects must not cancel the run others await
        return await asyncio.shield(self._inflight)

    async def _run_once(self) -> dict[str, Any]:
        self.runs += 1
        run, started = self.runs, datetime.now(timezone.utc)
        t0 = time.perf_counter()
        try:
            parity = await self.runtime.parity()
        except Exception as exc:  # a crash of the check is a failed check, not a dead server
            log.exception("parity check %d raised", run)
            parity = {"passed": False, "error": f"{type(exc).__name__}: {exc}", "layers": [], "model": None}
        rt = self.runtime
        failed = [c["name"] for c in parity.get("layers", []) if not c["passed"]]
        if parity.get("model") and not parity["model"]["passed"]:
            failed.append(parity["model"]["name"])
        report = {
            "status": "pass" if parity["passed"] else "fail",
            "passed": parity["passed"],
            "failed": failed,
            "model_name": rt.spec.name,
            "model_version": self.version,
            "weights": rt.spec.weights,
            "device": str(rt.device),
            "dtype": str(rt.dtype).removeprefix("torch."),
            "precision": parity.get("precision"),
            "tolerance_overrides": rt.tolerances,
            "layers": parity.get("layers", []),
            "model": parity.get("model"),
            "kernel": rt.kernel_info,
            # the parity check runs the model op by op; requests may replay captured graphs of it
            "cuda_graphs": {"max_shapes": rt.graphs.limit, "captured": rt.graphs.shapes,
                            "held_bytes": rt.graphs.held_bytes, "failed": rt.graphs.failed},
            "run": run,
            "started_at": started.isoformat(timespec="milliseconds"),
            "seconds": round(time.perf_counter() - t0, 4),
        }
        if "error" in parity:
            report["error"] = parity["error"]
        rt.ready = bool(parity["passed"])
        self.metrics.record_parity(rt.spec.name, parity)
        self.metrics.ready.labels(rt.spec.name).set(1 if rt.ready else 0)
        self.on_result(rt.ready)
        self.last = report
        _log_report(report)
        return report


def _log_report(report: dict[str, Any]) -> None:
    level = logging.INFO if report["passed"] else logging.ERROR
    log.log(level, "parity check %d %s for %s on %s/%s in %.3f s", report["run"],
            "passed" if report["passed"] else f"FAILED ({', '.join(report['failed']) or report.get('error')})",
            report["model_name"], report["device"], report["dtype"], report["seconds"])
    if report["passed"] and report["run"] > 1:
        return  # per-layer detail at start-up and on every failure; not on every healthy poll
    for c in report["layers"] + ([report["model"]] if report["model"] else []):
        log.log(level, "  %-4s %-20s rel %s max abs %s tol %.1e %s", "ok" if c["passed"] else "FAIL", c["name"] or "<root>",
                _fmt(c["rel_error"]), _fmt(c["max_abs_error"]), c["tolerance"], c.get("detail", ""))


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2e}"
