"""The seven KernelBench level-1 problems that are a single ConvTranspose2d.

Layer parameters and channel counts are the current KernelBench ones
(ScalingIntelligence/KernelBench, KernelBench/level1/); batch and spatial size
are whatever a request sends. The module mirrors KernelBench's ``Model`` (one
``conv_transpose2d`` attribute, bias=False) so its state_dict keys match.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .spec import ModelSpec, Shape, ShapeError, TensorSpec

Pair = tuple[int, int]


@dataclass(frozen=True)
class Problem:
    in_channels: int
    out_channels: int
    kernel_size: Pair
    stride: Pair = (1, 1)
    padding: Pair = (0, 0)
    output_padding: Pair = (0, 0)
    dilation: Pair = (1, 1)
    groups: int = 1
    example_hw: Pair = (12, 16)  # small: start-up parity must be quick on a CPU
    benchmark: str = ""  # KernelBench's input size, for the description

    def output_hw(self, hw: Pair) -> Pair:
        return tuple(
            (i - 1) * s - 2 * p + d * (k - 1) + o + 1
            for i, k, s, p, o, d in zip(hw, self.kernel_size, self.stride, self.padding, self.output_padding,
                                        self.dilation)
        )


PROBLEMS: dict[int, Problem] = {
    57: Problem(64, 64, (3, 3), benchmark="8 x 64 x 1024 x 1024"),
    65: Problem(64, 64, (3, 7), benchmark="8 x 64 x 512 x 512"),
    69: Problem(64, 128, (3, 5), benchmark="64 x 64 x 128 x 256"),
    71: Problem(32, 32, (3, 3), benchmark="8 x 32 x 512 x 1024"),
    75: Problem(32, 64, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), 4, benchmark="16 x 32 x 128 x 256"),
    78: Problem(32, 32, (3, 7), (1, 1), (1, 3), benchmark="8 x 32 x 512 x 1024"),
    81: Problem(32, 64, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), benchmark="16 x 32 x 64 x 128"),
}


class Model(nn.Module):
    def __init__(self, p: Problem):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(
            p.in_channels, p.out_channels, p.kernel_size, stride=p.stride, padding=p.padding,
            output_padding=p.output_padding, dilation=p.dilation, groups=p.groups, bias=False,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_transpose2d(x)


def _output_shapes(name: str, p: Problem):
    def shapes(inputs: list[Shape]) -> list[Shape]:
        n, _, h, w = inputs[0]
        ho, wo = p.output_hw((h, w))
        if ho < 1 or wo < 1:
            raise ShapeError(f"input H x W = {h} x {w} gives an empty output ({ho} x {wo}) for {name} "
                             f"(kernel {p.kernel_size}, stride {p.stride}, padding {p.padding}, dilation {p.dilation}); "
                             f"send a larger input")
        return [(n, p.out_channels, ho, wo)]

    return shapes


def builder(problem_id: int):
    p = PROBLEMS[problem_id]
    name = f"kernelbench-{problem_id}"

    def build() -> ModelSpec:
        return ModelSpec(
            name=name,
            module=Model(p),
            inputs=[TensorSpec("input", (-1, p.in_channels, -1, -1))],
            outputs=[TensorSpec("output", (-1, p.out_channels, -1, -1))],
            example_inputs=(torch.rand(2, p.in_channels, *p.example_hw),),
            output_shapes=_output_shapes(name, p),
            description=(f"KernelBench level 1 problem {problem_id}: ConvTranspose2d {p.in_channels}->{p.out_channels}, "
                         f"kernel {list(p.kernel_size)}, stride {list(p.stride)}, padding {list(p.padding)}, "
                         f"dilation {list(p.dilation)}, groups {p.groups}, no bias; benchmark input {p.benchmark}"),
        )

    build.__name__ = f"build_{problem_id}"
    return build


BUILDERS = {f"kernelbench-{i}": builder(i) for i in PROBLEMS}
