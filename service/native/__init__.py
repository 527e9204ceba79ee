"""JSON number arrays in C++ (json_numbers.cpp), built and cached like the kernels
(kernels/_build.py: prebuilt in the Docker image, loaded there without a compiler).

``lift(header)``: the request header with each ``inputs[i].data`` that is a regular
nest of plain JSON numbers replaced by ``null``, and for each the input's index and
the array ``np.asarray(data)`` would have made (int64 while every number is an
integer within int64, else float64; same shape). None when nothing was lifted or
the body holds anything the scanner does not fully understand (a syntax error,
NaN/Infinity, integers past int64, numbers out of double range, duplicate
``inputs`` or ``data`` keys, nesting past 64): the caller then parses the
original, so every verdict and error message stays the pure-Python path's.

``dump(tensor)``: the tensor's values, flat, as a JSON array: integers and bools
exactly; floats as the shortest text that reads back to the same value of the
tensor's own type (float16 and bfloat16 as their float32 value), integral floats
with ``.0``, and NaN/inf as the literals ``NaN``, ``Infinity``, ``-Infinity``.
"""

from __future__ import annotations

from pathlib import Path

import torch

from kernels import _build

_ext = _build.load_module("json", Path(__file__).resolve().parent, ("json_numbers.cpp",), ["-O3"])

# the struct module's letter for each dtype's elements; float16/bfloat16 go out as float32
_KINDS = {torch.bool: "?", torch.int8: "b", torch.uint8: "B", torch.int16: "h", torch.uint16: "H",
          torch.int32: "i", torch.uint32: "I", torch.int64: "q", torch.uint64: "Q",
          torch.float32: "f", torch.float64: "d"}


# Arrays of more values than this are read and printed by several threads (up to 8), the GIL released.
GRAIN = 1 << 16


def lift(header: bytes, grain: int = GRAIN):
    return _ext.lift(header, grain)


def dump(tensor: torch.Tensor, grain: int = GRAIN) -> bytes:
    flat = tensor.detach().cpu().reshape(-1)
    if flat.dtype in (torch.float16, torch.bfloat16):
        flat = flat.float()
    flat = flat.contiguous()
    return _ext.dump(flat.view(torch.uint8).numpy(), _KINDS[flat.dtype], grain)
