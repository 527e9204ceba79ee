"""Open Inference Protocol (KServe v2) messages, with the protocol's field names.

``data`` is left untyped on purpose: a tensor's values are checked and converted
in one vectorised step by the codec, not element by element by pydantic.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt

Parameters = dict[str, Any]


class _Message(BaseModel):
    # Clients may send fields of protocol extensions we do not use; ignore them.
    model_config = ConfigDict(extra="ignore")


class RequestInput(_Message):
    name: str
    shape: list[StrictInt]
    datatype: str
    parameters: Parameters | None = None
    data: Any = None


class RequestOutput(_Message):
    name: str
    parameters: Parameters | None = None


class InferenceRequest(_Message):
    id: str | None = None
    parameters: Parameters | None = None
    inputs: list[RequestInput] = Field(min_length=1)
    outputs: list[RequestOutput] | None = None


class ResponseOutput(_Message):
    name: str
    shape: list[int]
    datatype: str
    parameters: Parameters | None = None
    data: list[Any] | None = None


class InferenceResponse(_Message):
    model_name: str
    model_version: str | None = None
    id: str | None = None
    parameters: Parameters | None = None
    outputs: list[ResponseOutput]


class TensorMetadata(_Message):
    name: str
    datatype: str
    shape: list[int]


class ModelMetadata(_Message):
    name: str
    versions: list[str]
    platform: str
    inputs: list[TensorMetadata]
    outputs: list[TensorMetadata]
    parameters: Parameters | None = None


class ServerMetadata(_Message):
    name: str
    version: str
    extensions: list[str]


class ModelReady(_Message):
    name: str
    ready: bool
