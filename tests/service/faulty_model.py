"""A test-only user model whose import breaks our kernel for one layer shape.

Served as ``--model tests.service.faulty_model:factory``. Importing it replaces
the CPU and CUDA kernels of ``convt::conv_transpose2d`` with one that runs the
real kernel (through the untouched ``.out`` overload) and then perturbs the
result whenever the weight has FAULTY_WEIGHT_SHAPE: DCGAN's third layer,
``main.6``. PyTorch's own ConvTranspose2d is untouched, so the parity check sees
exactly one layer disagree. Nothing of this lives in production code.
"""

from __future__ import annotations

import torch

import kernels  # noqa: F401  (registers the op whose kernels we override)
import models

FAULTY_LAYER = "main.6"
FAULTY_WEIGHT_SHAPE = (256, 128, 4, 4)

_lib = torch.library.Library("convt", "IMPL")  # kept alive: dropping it would undo the override


def _faulty(input, weight, bias=None, stride=(1, 1), padding=(0, 0), output_padding=(0, 0), groups=1, dilation=(1, 1)):
    args = (stride, padding, output_padding, groups, dilation)
    meta = torch.ops.convt.conv_transpose2d(input.to("meta"), weight.to("meta"),
                                            None if bias is None else bias.to("meta"), *args)
    out = input.new_empty(meta.shape)
    torch.ops.convt.conv_transpose2d.out(input, weight, bias, *args, out=out)
    if tuple(weight.shape) == FAULTY_WEIGHT_SHAPE:
        out.add_(0.05 * out.abs().amax().clamp_min(1e-3))  # far outside any tolerance
    return out


for _key in ("CPU", "CUDA"):
    _lib.impl("conv_transpose2d", _faulty, _key)


def factory() -> models.ModelSpec:
    spec = models.load_model("dcgan")
    spec.name = "dcgan-faulty"
    return spec
