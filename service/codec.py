"""Request bodies to tensors and tensors to response bodies (JSON and binary).

Binary tensor data extension: the body is the JSON header followed by each
binary tensor's raw bytes (little-endian, row-major) in order; the header's length
travels in ``Inference-Header-Content-Length``. Every size is checked against
the declared shape before anything of that size is allocated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pydantic
import pydantic_core
import torch

from . import native
from .bounded import Bounded
from .errors import InvalidRequest
from .protocol import InferenceRequest, RequestInput

HEADER_LENGTH = "Inference-Header-Content-Length"
MIN_ALIGN = 16


@dataclass(frozen=True)
class Datatype:
    name: str
    torch: torch.dtype
    numpy_kinds: str  # numpy kinds accepted in JSON data: f float, i/u integer, b bool

    @property
    def numpy(self) -> np.dtype | None:
        """The numpy dtype of the same values (none for BF16), little-endian as the protocol's bytes."""
        return _NUMPY.get(self.torch)


DATATYPES: dict[str, Datatype] = {d.name: d for d in [
    Datatype("BOOL", torch.bool, "b"),
    Datatype("UINT8", torch.uint8, "iu"),
    Datatype("UINT16", torch.uint16, "iu"),
    Datatype("UINT32", torch.uint32, "iu"),
    Datatype("UINT64", torch.uint64, "iu"),
    Datatype("INT8", torch.int8, "iu"),
    Datatype("INT16", torch.int16, "iu"),
    Datatype("INT32", torch.int32, "iu"),
    Datatype("INT64", torch.int64, "iu"),
    Datatype("FP16", torch.float16, "fiu"),
    Datatype("FP32", torch.float32, "fiu"),
    Datatype("FP64", torch.float64, "fiu"),
    Datatype("BF16", torch.bfloat16, "fiu"),
]}
BY_TORCH = {d.torch: d.name for d in DATATYPES.values()}
_NUMPY = {d.torch: np.dtype(str(d.torch).removeprefix("torch.")).newbyteorder("<") for d in DATATYPES.values()
          if d.torch not in (torch.bfloat16, torch.bool)}


def datatype_of(dtype: torch.dtype) -> str:
    return BY_TORCH[dtype]


def itemsize(datatype: str) -> int:
    return DATATYPES[datatype].torch.itemsize


def split_body(body: bytes | memoryview, header_length: str | None) -> tuple[bytes, memoryview]:
    """The JSON header (a copy: the parser takes bytes) and the binary tail (a view; empty without the header)."""
    if header_length is None:
        return bytes(body), memoryview(b"")
    try:
        n = int(header_length.strip())
    except ValueError:
        raise InvalidRequest(f"{HEADER_LENGTH} must be a non-negative integer (the JSON header's byte length), "
                             f"got {header_length!r}") from None
    if not 0 <= n <= len(body):
        raise InvalidRequest(f"{HEADER_LENGTH} is {n} but the body is {len(body)} bytes; it must be the byte "
                             f"length of the JSON header at the start of the body")
    view = memoryview(body)
    return bytes(view[:n]), view[n:]


def parse_request(header: bytes) -> InferenceRequest:
    """The request, its JSON number arrays read in C++ where service.native can (as np.asarray arrays in
    ``data``); pydantic then parses only the rest: one Python object per value was most of a JSON request's cost."""
    lifted = native.lift(header)
    if lifted is not None:
        small, arrays = lifted
        try:
            request = InferenceRequest.model_validate_json(small)
        except pydantic.ValidationError:
            request = None  # the original's own error below, message for message
        if request is not None:
            for index, values in arrays:
                request.inputs[index].data = values
            return request
    return _validate(header)


def _validate(header: bytes) -> InferenceRequest:
    try:
        return InferenceRequest.model_validate_json(header)
    except pydantic.ValidationError as exc:
        parts = []
        for e in exc.errors(include_url=False):
            loc = ".".join(str(p) for p in e["loc"])
            parts.append(f"{loc}: {e['msg']}" if loc else e["msg"])
        raise InvalidRequest("malformed inference request: " + "; ".join(parts) +
                             ' (expected {"inputs": [{"name", "shape", "datatype", "data"}], ...})') from None


def binary_size(inp: RequestInput) -> int | None:
    params = inp.parameters or {}
    if "shared_memory_region" in params:
        raise InvalidRequest(f"input {inp.name!r}: the shared-memory extension is not supported; send data or binary")
    size = params.get("binary_data_size")
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise InvalidRequest(f"input {inp.name!r}: binary_data_size must be a non-negative integer, got {size!r}")
    if inp.data is not None:
        raise InvalidRequest(f"input {inp.name!r} has both data and binary_data_size; send one")
    return size


def slice_binary(inputs: list[RequestInput], tail: memoryview) -> dict[str, memoryview]:
    """Each binary input's bytes, in input order; the sizes must add up to the tail."""
    chunks, offset = {}, 0
    for inp in inputs:
        size = binary_size(inp)
        if size is None:
            continue
        if offset + size > len(tail):
            raise InvalidRequest(f"input {inp.name!r}: binary_data_size {size} runs past the end of the body "
                                 f"({len(tail) - offset} bytes left after the JSON header)")
        chunks[inp.name] = tail[offset:offset + size]
        offset += size
    if offset != len(tail):
        raise InvalidRequest(f"{len(tail) - offset} bytes after the binary inputs are not claimed by any "
                             f"binary_data_size; the binary part must be exactly the inputs' bytes")
    return chunks


def decode_input(inp: RequestInput, raw: memoryview | None) -> torch.Tensor:
    """The input's tensor, from its binary bytes or its JSON ``data``."""
    dt = DATATYPES.get(inp.datatype)
    if dt is None:
        raise InvalidRequest(f"input {inp.name!r}: datatype {inp.datatype!r} is not supported; "
                             f"expected one of {sorted(DATATYPES)}")
    count = math.prod(inp.shape)
    if raw is not None:
        expected = count * dt.torch.itemsize
        if len(raw) != expected:
            raise InvalidRequest(f"input {inp.name!r}: binary_data_size is {len(raw)} bytes but shape {inp.shape} "
                                 f"of {inp.datatype} needs {count} x {dt.torch.itemsize} = {expected} bytes")
        if count == 0:
            return torch.empty(inp.shape, dtype=dt.torch)
        if raw.readonly:  # torch views only writable memory; service/body.py reads bodies into writable buffers
            raw = memoryview(bytearray(raw))
        if dt.torch == torch.bool:
            return torch.frombuffer(raw, dtype=torch.uint8).ne(0).reshape(inp.shape)
        if dt.numpy is not None:  # numpy's view and reshape cost half of torch's
            t = torch.from_numpy(np.frombuffer(raw, dtype=dt.numpy).reshape(inp.shape))  # a view of the body
        else:
            t = torch.frombuffer(raw, dtype=dt.torch).reshape(inp.shape)
        # kernels may load whole vectors; a tensor after another input of odd size can start anywhere
        return t if t.data_ptr() % MIN_ALIGN == 0 else t.clone()
    return _from_json(inp, dt, count)


def _from_json(inp: RequestInput, dt: Datatype, count: int) -> torch.Tensor:
    if isinstance(inp.data, np.ndarray):  # lifted by parse_request: what np.asarray(data) below makes of it
        return _to_tensor(inp, dt, count, inp.data)
    if inp.data is None:
        raise InvalidRequest(f"input {inp.name!r} has no data: send \"data\" (a flat or nested list) or "
                             f"\"parameters\": {{\"binary_data_size\": n}} with the bytes after the header")
    if not isinstance(inp.data, list):
        raise InvalidRequest(f"input {inp.name!r}: data must be a list (flat or nested, row-major), "
                             f"got {type(inp.data).__name__}")
    try:
        arr = np.asarray(inp.data)
    except (ValueError, TypeError, OverflowError):
        raise InvalidRequest(f"input {inp.name!r}: data is not a regular nested list of numbers "
                             f"(rows of different lengths?); expected shape {inp.shape}") from None
    return _to_tensor(inp, dt, count, arr)


def _to_tensor(inp: RequestInput, dt: Datatype, count: int, arr: np.ndarray) -> torch.Tensor:
    if dt.torch == torch.uint64 and arr.dtype.kind in "fO":
        arr = _uint64(inp, arr)  # numpy turns ints past 2**63 - 1 into floats or objects
    if arr.dtype.kind not in dt.numpy_kinds and arr.size:
        got = {"U": "strings", "S": "strings", "O": "mixed or irregular values", "b": "booleans",
               "f": "non-integral numbers"}.get(arr.dtype.kind, str(arr.dtype))
        want = {"b": "true/false", "iu": "integers", "fiu": "numbers"}[dt.numpy_kinds]
        raise InvalidRequest(f"input {inp.name!r}: data holds {got}; {inp.datatype} data must be {want}")
    if arr.size != count:
        raise InvalidRequest(f"input {inp.name!r}: data has {arr.size} values but shape {inp.shape} needs {count}")
    np_dtype = np.float32 if dt.torch == torch.bfloat16 else torch.empty(0, dtype=dt.torch).numpy().dtype
    try:
        values = arr.astype(np_dtype, casting="unsafe").reshape(inp.shape)
    except (ValueError, OverflowError) as exc:
        raise InvalidRequest(f"input {inp.name!r}: data cannot be read as {inp.datatype}: {exc}") from None
    if dt.numpy_kinds == "iu" and values.size and not np.array_equal(values.reshape(arr.shape), arr):
        raise InvalidRequest(f"input {inp.name!r}: data has values outside the range of {inp.datatype}")
    return torch.from_numpy(values).to(dt.torch)


def _uint64(inp: RequestInput, arr: np.ndarray) -> np.ndarray:
    try:
        exact = np.array(inp.data, dtype=object)
        if exact.shape == arr.shape and all(type(v) is int and 0 <= v < 2**64 for v in exact.flat):
            return exact.astype(np.uint64)
    except (ValueError, TypeError, OverflowError):
        pass
    return arr


def wants_binary(request: InferenceRequest) -> tuple[bool, dict[str, bool]]:
    """The request-level default and each named output's choice of binary data."""
    default = (request.parameters or {}).get("binary_data_output", False)
    if not isinstance(default, bool):
        raise InvalidRequest(f"parameters.binary_data_output must be true or false, got {default!r}")
    per_output = {}
    for out in request.outputs or []:
        params = out.parameters or {}
        if "classification" in params:
            raise InvalidRequest(f"output {out.name!r}: the classification extension is not supported")
        if "shared_memory_region" in params:
            raise InvalidRequest(f"output {out.name!r}: the shared-memory extension is not supported")
        choice = params.get("binary_data", default)
        if not isinstance(choice, bool):
            raise InvalidRequest(f"output {out.name!r}: parameters.binary_data must be true or false, got {choice!r}")
        per_output[out.name] = choice
    return default, per_output


# The JSON head of a response whose outputs are all binary depends only on the model, the id and the
# outputs' names, shapes and datatypes: a server answering one client's requests writes the same head
# each time. Bounded like the data plane's request plans.
HEADS_MAX = 256
HEAD_MAX_BYTES = 4096
_HEADS: Bounded = Bounded(HEADS_MAX)


def encode_response(header: dict[str, Any], outputs: list[tuple[str, torch.Tensor, bool]],
                    parts: bool = False) -> tuple[bytes | list[bytes | memoryview], int | None]:
    """The response body and, when any output is binary, the JSON header's length. With ``parts``, a
    body with binary outputs comes as its pieces (the header's bytes, then views of each tensor's), for a
    server that writes them one by one instead of copying them into one buffer."""
    blobs = [_bytes_of(t) if binary else None for _, t, binary in outputs]
    if all(b is not None for b in blobs):
        key = (*header.items(), *((name, tuple(t.shape), t.dtype) for name, t, _ in outputs))
        head = _HEADS.get(key)
        if head is None:
            head = _encode_head(header, outputs, blobs)
            if len(head) <= HEAD_MAX_BYTES:  # a client's long id must not pin memory in the cache
                _HEADS.put(key, head)
    else:
        head = _encode_head(header, outputs, blobs)
    binary_blobs = [b for b in blobs if b is not None]
    if not binary_blobs:
        return head, None
    return ([head, *binary_blobs] if parts else b"".join([head, *binary_blobs])), len(head)


def _bytes_of(t: torch.Tensor) -> memoryview | bytes:
    """A tensor's bytes, row-major, as a view where the tensor is a contiguous CPU one (the response's
    write, or the body join, is then their only copy)."""
    if t.is_cuda or t.requires_grad:
        t = t.detach().cpu()
    if t.dtype == torch.bfloat16 or t.dtype == torch.bool:  # no numpy dtype of their own: the bytes as they are
        t = t.view(torch.uint8 if t.dtype == torch.bool else torch.int16)
    arr = t.numpy()
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return memoryview(arr).cast("B") if arr.size else b""


def _encode_head(header: dict[str, Any], outputs: list[tuple[str, torch.Tensor, bool]],
                 blobs: list[memoryview | bytes | None]) -> bytes:
    """The JSON of the response, every binary output's bytes left out (``blobs[i]`` is output i's bytes
    if it is binary, else None)."""
    # pydantic-core writes the small JSON around the data; each "data" array is printed by service.native
    # (floats as the shortest text that reads back to the tensor's value, NaN and inf as the literals
    # NaN/Infinity: a model may output them, and Python and Triton clients read them back) and spliced in
    # as the entry's last member, where {"name", "shape", "datatype", "data"} had it
    head = pydantic_core.to_json({**header, "outputs": []}, inf_nan_mode="constants")
    pieces = [head[:-len(b"[]}")], b"["]  # to_json is compact: head ends with "outputs":[]}
    for i, ((name, t, _), blob) in enumerate(zip(outputs, blobs)):
        entry: dict[str, Any] = {"name": name, "shape": list(t.shape), "datatype": datatype_of(t.dtype)}
        if i:
            pieces.append(b",")
        if blob is not None:
            entry["parameters"] = {"binary_data_size": len(blob)}
            pieces.append(pydantic_core.to_json(entry))
        else:
            pieces += [pydantic_core.to_json(entry)[:-1], b',"data":', native.dump(t), b"}"]
    pieces.append(b"]}")
    return b"".join(pieces)
