"""The op's Python face: the public function and its fake (meta) kernel.

The schema, the CPU/CUDA kernels and the backward (aten's convolution_backward,
so a swapped model can still be fine-tuned) are registered by the C++ extensions
(``csrc/``); the dispatcher picks the backend. This module adds what the
compiler stack needs to trace through the op (a fake kernel), and routes plain
eager calls through the typed entry (``csrc/entry.cpp``) rather than torch.ops'
boxed argument parse.
"""

from __future__ import annotations

from typing import Sequence, Union

import torch

from . import _build

IntPair = Union[int, Sequence[int]]

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)

# The overload itself: calling the packet (torch.ops.convt.conv_transpose2d) resolves it on every call.
_OP = torch.ops.convt.conv_transpose2d.default
# The typed entry (csrc/entry.cpp): the same dispatcher call without torch.ops' boxed argument parse.
_ENTRY = _build.STATE.entry.conv_transpose2d
_PLAIN = (torch.Tensor, torch.nn.Parameter)  # no __torch_function__ of their own
_mode_on = torch._C._is_torch_function_mode_enabled
_compiling = torch.compiler.is_compiling


def conv_transpose2d(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair = 0,
    output_padding: IntPair = 0,
    groups: int = 1,
    dilation: IntPair = 1,
) -> torch.Tensor:
    """Same signature and semantics as ``torch.nn.functional.conv_transpose2d``.

    Input is (N, C_in, H, W) or unbatched (C_in, H, W); weight is
    (C_in, C_out / groups, kH, kW). Arguments are parsed by the op's schema, which
    mirrors aten's, so ints and pairs are accepted exactly where torch accepts them.
    """
    # Plain tensors outside torch-function modes and compiler tracing: the typed entry, which also takes the pairs as
    # ints or 2-tuples of ints (else it returns None). Anything that may carry a __torch_function__ (a subclass, a
    # mode) or is being traced by dynamo goes through torch.ops, which honours it. A batch-1 decoder layer's GPU time
    # is ~10 us, so each microsecond of host time here is a visible share of it.
    if (type(input) in _PLAIN and type(weight) in _PLAIN and (bias is None or type(bias) in _PLAIN)
            and type(groups) is int and not _mode_on() and not _compiling()):
        out = _ENTRY(input, weight, bias, stride, padding, output_padding, groups, dilation)
        if out is not None:
            return out
    if not (type(groups) is int and _plain(stride) and _plain(padding) and _plain(output_padding) and _plain(dilation)):
        _check_arg_types(stride=stride, padding=padding, output_padding=output_padding, dilation=dilation,
                         groups=groups)
    return _OP(input, weight, bias, stride, padding, output_padding, groups, dilation)


def _plain(v) -> bool:
    t = type(v)
    return t is int or (t is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int)


def _is_int(v) -> bool:
    return isinstance(v, (int, torch.SymInt)) and not isinstance(v, bool)


def _check_arg_types(**args) -> None:
    """TypeError for ill-typed arguments, as torch's argument parser raises
    (the op's own schema parser would report a RuntimeError instead)."""
    for name, v in args.items():
        ok = _is_int(v) if name == "groups" else (
            _is_int(v) or (isinstance(v, (tuple, list, torch.Size)) and all(_is_int(e) for e in v)))
        if not ok:
            want = "int" if name == "groups" else "tuple of ints"
            raise TypeError(f"conv_transpose2d(): argument '{name}' must be {want}, not {type(v).__name__}")


def conv_transpose2d_out(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1, *, out):
    """``conv_transpose2d`` into a caller's contiguous tensor of the output's shape."""
    return torch.ops.convt.conv_transpose2d.out(
        input, weight, bias, stride, padding, output_padding, groups, dilation, out=out
    )


def _pair(v: Sequence[int]) -> tuple[int, int]:
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def output_size(in_hw, weight_hw, stride, padding, output_padding, dilation) -> tuple[int, int]:
    """Output spatial size: (H_in - 1)*s - 2p + d*(k - 1) + op + 1 per axis."""
    return tuple(
        (i - 1) * s - 2 * p + d * (k - 1) + o + 1
        for i, k, s, p, o, d in zip(in_hw, weight_hw, stride, padding, output_padding, dilation)
    )


@torch.library.register_fake("convt::conv_transpose2d")
def _fake(input, weight, bias=None, stride=(1, 1), padding=(0, 0), output_padding=(0, 0), groups=1, dilation=(1, 1)):
    stride, padding, output_padding, dilation = map(_pair, (stride, padding, output_padding, dilation))
    torch._check(input.dim() in (3, 4), lambda: f"Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: {list(input.shape)}")
    torch._check(weight.dim() == 4, lambda: f"conv_transpose2d: expected a 4D weight, but got weight of size: {list(weight.shape)}")
    torch._check(input.dtype == weight.dtype, lambda: f"conv_transpose2d: input type ({input.dtype}) and weight type ({weight.dtype}) should be the same")
    torch._check(input.dtype in SUPPORTED_DTYPES, lambda: f"conv_transpose2d: unsupported dtype {input.dtype}")
    torch._check(groups > 0 and weight.shape[0] % groups == 0, lambda: f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size {list(weight.shape)} instead")
    torch._check(input.shape[-3] == weight.shape[0], lambda: f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(input.shape)} to have {weight.shape[0]} channels, but got {input.shape[-3]} channels instead")
    for o, s, d in zip(output_padding, stride, dilation):
        torch._check(o < s or o < d, lambda: "output padding must be smaller than either stride or dilation")
    cout = weight.shape[1] * groups
    if bias is not None:
        torch._check(bias.dim() == 1 and bias.shape[0] == cout, lambda: f"expected bias to be 1-dimensional with {cout} elements, but got bias of size {list(bias.shape)} instead")
    h, w = output_size(input.shape[-2:], weight.shape[-2:], stride, padding, output_padding, dilation)
    torch._check(h > 0 and w > 0, lambda: f"Calculated output size per channel: ({h} x {w}). Output size is too small")
    shape = (cout, h, w) if input.dim() == 3 else (input.shape[0], cout, h, w)
    return input.new_empty(shape)


@torch.library.register_fake("convt::conv_transpose2d.out")
def _fake_out(input, weight, bias=None, stride=(1, 1), padding=(0, 0), output_padding=(0, 0), groups=1,
              dilation=(1, 1), *, out):
    expected = _fake(input, weight, bias, stride, padding, output_padding, groups, dilation)
    torch._check(out.shape == expected.shape, lambda: f"conv_transpose2d: out has size {list(out.shape)}, expected {list(expected.shape)}")
    return out
