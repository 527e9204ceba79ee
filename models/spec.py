"""What a served model is: its module, input and output specs, and an example input.

Shapes use -1 for a dimension the caller chooses (dim 0 is the batch). A spec
with ``dtype=None`` takes the dtype the model is served in, so one definition
serves fp32, fp16 and bf16.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
from torch import nn

Shape = tuple[int, ...]


class ShapeError(ValueError):
    """Input shapes the model cannot take; the message says what it expects."""


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: Shape
    dtype: torch.dtype | None = None

    def fits(self, shape: Sequence[int]) -> bool:
        return len(shape) == len(self.shape) and all(w in (-1, s) for w, s in zip(self.shape, shape))


@dataclass
class ModelSpec:
    """A model ready to load: ``module`` takes the inputs in ``inputs`` order and
    returns a tensor or a tuple of tensors in ``outputs`` order.

    ``example_inputs`` (float32, CPU) drive the start-up parity check.
    ``output_shapes``, when given, maps input shapes to output shapes and raises
    ShapeError for inputs the model cannot take; it lets a server refuse a request
    before allocating anything.
    """

    name: str
    module: nn.Module
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    example_inputs: tuple[torch.Tensor, ...]
    output_shapes: Callable[[list[Shape]], list[Shape]] | None = None
    description: str = ""
    platform: str = "pytorch"
    weights: dict[str, Any] = field(default_factory=dict)  # provenance, set by the loader
    # Whether a server may capture the forward as a CUDA graph per input shape and replay it: False for a
    # module whose forward depends on more than its inputs' shapes (values read to the host, Python-side state).
    graph_safe: bool = True

    @classmethod
    def from_example(cls, module: nn.Module, example_inputs: torch.Tensor | Sequence[torch.Tensor], name: str,
                     description: str = "") -> "ModelSpec":
        """Specs from one run on the example: names input__i/output__i (Triton's
        convention), dim 0 the batch, every other dimension fixed."""
        if isinstance(example_inputs, torch.Tensor):
            example_inputs = (example_inputs,)
        example_inputs = tuple(example_inputs)
        was_training = module.training
        module.eval()
        with torch.no_grad():
            out = module(*example_inputs)
        module.train(was_training)
        outs = (out,) if isinstance(out, torch.Tensor) else tuple(out)
        batched = lambda t: (-1, *t.shape[1:])  # noqa: E731
        return cls(
            name=name, module=module, description=description, example_inputs=example_inputs,
            inputs=[TensorSpec(f"input__{i}", batched(t)) for i, t in enumerate(example_inputs)],
            outputs=[TensorSpec(f"output__{i}", batched(t)) for i, t in enumerate(outs)],
        )

    def validate(self) -> None:
        """Raises ValueError when the spec contradicts itself."""
        if not isinstance(self.module, nn.Module):
            raise ValueError(f"model {self.name!r}: module is a {type(self.module).__name__}, not an nn.Module")
        if len(self.example_inputs) != len(self.inputs):
            raise ValueError(f"model {self.name!r}: {len(self.example_inputs)} example inputs for {len(self.inputs)} input specs")
        for spec, t in zip(self.inputs, self.example_inputs):
            if not spec.fits(t.shape):
                raise ValueError(f"model {self.name!r}: example input {spec.name} has shape {list(t.shape)}, "
                                 f"which does not fit {list(spec.shape)}")
        names = [s.name for s in self.inputs + self.outputs]
        if len(set(names)) != len(names):
            raise ValueError(f"model {self.name!r}: tensor names must be unique, got {names}")

    def check_shapes(self, shapes: list[Shape]) -> list[Shape | None]:
        """Output shapes for these input shapes (None where unknown before running).

        Raises ShapeError naming the input and the expected shape.
        """
        if len(shapes) != len(self.inputs):
            raise ShapeError(f"model {self.name!r} takes {len(self.inputs)} inputs, got {len(shapes)}")
        for spec, shape in zip(self.inputs, shapes):
            if not spec.fits(shape):
                raise ShapeError(f"input {spec.name!r} has shape {list(shape)}; model {self.name!r} expects "
                                 f"{list(spec.shape)} (-1: any size >= 1)")
            if any(d < 1 for d in shape):
                raise ShapeError(f"input {spec.name!r} has shape {list(shape)}; every dimension must be >= 1")
        batches = {shape[0] for spec, shape in zip(self.inputs, shapes) if spec.shape and spec.shape[0] == -1}
        if len(batches) > 1:
            raise ShapeError(f"inputs disagree on the batch size (dim 0): {sorted(batches)}")
        if self.output_shapes is not None:
            return [tuple(s) for s in self.output_shapes([tuple(s) for s in shapes])]
        batch = batches.pop() if batches else None
        return [(batch, *o.shape[1:]) if batch is not None and o.shape[0] == -1 and -1 not in o.shape[1:]
                else (o.shape if -1 not in o.shape else None) for o in self.outputs]


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)
