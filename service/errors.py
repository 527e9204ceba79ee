"""The service's domain errors and the one place that maps them to HTTP statuses.

Everything a client can get wrong raises one of these with a message that says
what was wrong and what was expected; the handlers below turn them (and
FastAPI's and Starlette's own) into ``{"error": "..."}`` bodies.
"""

from __future__ import annotations

import json
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("convt.service")


class ServiceError(Exception):
    """Base of every error a request can end in."""


class InvalidRequest(ServiceError):
    """Malformed body or header, or inputs that do not fit the model."""


class ModelNotFound(ServiceError):
    """Unknown model name or version."""


class ModelNotReady(ServiceError):
    """The model is loading or failed its parity check."""


class PayloadTooLarge(ServiceError):
    """The request body is over the configured limit."""


class UnsupportedMediaType(ServiceError):
    """A Content-Encoding the server does not decode."""


class DeviceOutOfMemory(ServiceError):
    """The device ran out of memory for this request; the server has recovered."""


class QueueFull(ServiceError):
    """Too many requests are already waiting for the device; retry later."""

    retry_after_s = 1
class ClientClosedRequest(ServiceError):
    """The client went away before sending its whole body; nobody reads the answer."""


class RequestTimeout(ServiceError):
    """The inference did not finish within --request-timeout-s."""


STATUS: dict[type[ServiceError], int] = {
    InvalidRequest: 400,
    ModelNotFound: 404,
    PayloadTooLarge: 413,
    UnsupportedMediaType: 415,
    ModelNotReady: 503,
    DeviceOutOfMemory: 503,
    QueueFull: 429,
    ClientClosedRequest: 499,  # nginx's code: counted apart from the client errors that got an answer
    RequestTimeout: 504,
}


def status_of(exc: ServiceError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def error_parts(exc: Exception) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Status, headers and body of the answer to ``exc``, for handlers that speak ASGI directly
    (service/fastpath.py): the same answers as the handlers installed below."""
    if isinstance(exc, ServiceError):
        status, message = status_of(exc), str(exc)
    else:
        status, message = 500, f"internal error ({type(exc).__name__}); the server logged the details"
    headers = [(b"content-type", b"application/json")]
    if isinstance(exc, QueueFull):
        headers.append((b"retry-after", str(exc.retry_after_s).encode()))
    return status, headers, json.dumps({"error": message}, ensure_ascii=False, separators=(",", ":")).encode()


def _error_parts_response(exc: Exception) -> Response:
    status, headers, body = error_parts(exc)
    return Response(body, status_code=status, headers={k.decode("latin-1"): v.decode("latin-1") for k, v in headers})


def install(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service(request: Request, exc: ServiceError) -> Response:
        return _error_parts_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404:
            message = f"no endpoint {request.method} {request.url.path}; see the v2 protocol paths under /v2"
        elif exc.status_code == 405:
            message = f"method {request.method} is not allowed on {request.url.path}"
        return JSONResponse({"error": message}, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors()]
        return error_response(400, "invalid request: " + "; ".join(parts))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return _error_parts_response(exc)
