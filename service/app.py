"""The app: v2 protocol endpoints, /health and /metrics (FastAPI, behind the infer fast path).

Handlers are thin adapters onto the DataPlane; errors are mapped in errors.py.
``uvicorn --factory service.app:create_app`` also works (settings from CONVT_*).
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from . import errors, serving
from .auth import BearerAuthMiddleware
from .dataplane import DataPlane
from .fastpath import InferFastPath
from .group import WorkerGroup, WorkerHeaderMiddleware
from .metrics import Metrics, MetricsMiddleware
from .openapi import infer_operation
from .protocol import ModelMetadata, ModelReady, ServerMetadata
from .runtime import StartupError
from .settings import Settings

log = logging.getLogger("convt.service")

SERVER_NAME = "convt-serve"
EXTENSIONS = ["binary_tensor_data"]


def _version() -> str:
    try:
        return version("convt-serve")
    except PackageNotFoundError:
        return "0+unknown"


def create_app(settings: Settings | None = None, group: WorkerGroup | None = None, link=None) -> InferFastPath:
    """``link``: this process is a front end of ``--frontends``, and the socket reaches the device process."""
    settings = settings or Settings()
    group = group or WorkerGroup()
    metrics = Metrics(device=link is None, frontend=link is not None)
    plane = DataPlane(settings, metrics, group, link)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        try:
            await plane.start()
        except StartupError as exc:
            log.error("start-up failed: %s", exc)
            raise
        serving.settle_heap()
        yield
        plane.close()

    app = FastAPI(title=SERVER_NAME, version=_version(), lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.plane = plane
    infer_routes: dict[bool, object] = {}  # filled below, once the routes exist
    if settings.api_token is not None:  # added first: inside the metrics, so that 401s are counted
        app.add_middleware(BearerAuthMiddleware, token=settings.api_token.get_secret_value())
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(WorkerHeaderMiddleware, index=group.index)
    errors.install(app)

    def ready_response(ready: bool, body: dict) -> JSONResponse:
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get("/v2/health/live")
    async def live() -> dict:
        return {"live": True}

    @app.get("/v2/health/ready")
    async def ready() -> JSONResponse:
        return ready_response(plane.ready, {"ready": plane.ready})

    @app.get("/v2", response_model=ServerMetadata)
    async def server_metadata() -> ServerMetadata:
        return ServerMetadata(name=SERVER_NAME, version=_version(), extensions=EXTENSIONS)

    @app.get("/v2/models/{name}", response_model=ModelMetadata, response_model_exclude_none=True)
    @app.get("/v2/models/{name}/versions/{model_version}", response_model=ModelMetadata,
             response_model_exclude_none=True)
    async def model_metadata(name: str, model_version: str | None = None) -> ModelMetadata:
        return plane.metadata(name, model_version)

    @app.get("/v2/models/{name}/ready")
    @app.get("/v2/models/{name}/versions/{model_version}/ready")
    async def model_ready(name: str, model_version: str | None = None) -> JSONResponse:
        rt = plane.model(name, model_version)
        return ready_response(plane.ready, ModelReady(name=rt.spec.name, ready=plane.ready).model_dump())

    @app.post("/v2/models/{name}/infer", openapi_extra=infer_operation())
    @app.post("/v2/models/{name}/versions/{model_version}/infer", openapi_extra=infer_operation())
    async def infer(name: str, request: Request, model_version: str | None = None) -> Response:
        """Answered by InferFastPath before routing; kept for /openapi.json and the metrics' labels."""
        raise RuntimeError("the infer route is served by service.fastpath.InferFastPath")

    for route in app.routes:
        if getattr(route, "endpoint", None) is infer:
            infer_routes["{model_version}" in route.path] = route

    @app.get("/health")
    async def health() -> JSONResponse:
        if plane.health is None:
            return JSONResponse({"status": "fail", "passed": False, "error": "the model is still loading"},
                                status_code=503)
        report = await plane.health.run()
        return JSONResponse({**report, "worker": group.describe()}, status_code=200 if report["passed"] else 503)

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        body, content_type = metrics.render()
        return Response(body + await plane.device_metrics(), media_type=content_type)

    # The infer endpoint's fast path is what uvicorn calls: it does what the middleware above would for it
    return InferFastPath(app, plane, settings, infer_routes, metrics, group.index)
