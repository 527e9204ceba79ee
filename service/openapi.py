"""The infer route's request body in the OpenAPI schema.

The route reads the raw body itself (JSON, or JSON header plus binary tensors),
so FastAPI cannot derive the body from a parameter; this states it, so that
clients and schema-driven fuzzers (schemathesis) see the v2 InferenceRequest.
"""

from __future__ import annotations

from typing import Any

from .protocol import InferenceRequest


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """The schema with its local $refs replaced by their definitions (the protocol has no recursion)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _inline(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
        return {k: _inline(v, defs) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {
        "type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}}}}


def infer_operation() -> dict[str, Any]:
    """``openapi_extra`` for the infer routes: the request body and the error answers."""
    schema = InferenceRequest.model_json_schema()
    request = _inline(schema, schema.get("$defs", {}))
    return {
        "requestBody": {"required": True, "content": {
            "application/json": {"schema": request},
            "application/octet-stream": {
                "schema": {"type": "string", "format": "binary"},
                "description": "binary tensor data extension: the JSON InferenceRequest, then the inputs' raw "
                               "bytes; the JSON's length in the Inference-Header-Content-Length header"},
        }},
        "responses": {
            "400": _error("malformed request, or inputs that do not fit the model"),
            "401": _error("missing or wrong bearer token (when CONVT_API_TOKEN is set)"),
            "404": _error("unknown model or version"),
            "413": _error("body over --max-request-bytes"),
            "415": _error("unsupported Content-Encoding"),
            "503": _error("model not ready, or the device ran out of memory for this request"),
            "504": _error("inference over --request-timeout-s"),
        },
    }
