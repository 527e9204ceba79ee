"""ModelSpec: shape checks with -1 dimensions and self-consistency."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import models
from models import ModelSpec, ShapeError, TensorSpec


def dcgan() -> ModelSpec:
    return models.load_model("dcgan")


def test_batch_dimension_is_free():
    spec = dcgan()
    assert spec.check_shapes([(1, 100, 1, 1)]) == [(1, 3, 64, 64)]
    assert spec.check_shapes([(257, 100, 1, 1)]) == [(257, 3, 64, 64)]


@pytest.mark.parametrize("shape,message", [
    ((1, 100, 2, 1), r"expects \[-1, 100, 1, 1\]"),
    ((1, 100, 1), r"expects \[-1, 100, 1, 1\]"),
    ((0, 100, 1, 1), "every dimension must be >= 1"),
    ((-5, 100, 1, 1), "every dimension must be >= 1"),
])
def test_shapes_that_do_not_fit(shape, message):
    with pytest.raises(ShapeError, match=message):
        dcgan().check_shapes([shape])


def test_input_count():
    with pytest.raises(ShapeError, match="takes 1 inputs, got 2"):
        dcgan().check_shapes([(1, 100, 1, 1), (1, 100, 1, 1)])


class Pair(nn.Module):
    def forward(self, a, b):
        return a + b


def test_inputs_must_agree_on_the_batch():
    spec = ModelSpec("pair", Pair(), [TensorSpec("a", (-1, 2)), TensorSpec("b", (-1, 2))],
                     [TensorSpec("sum", (-1, 2))], (torch.zeros(1, 2), torch.zeros(1, 2)))
    spec.validate()
    assert spec.check_shapes([(3, 2), (3, 2)]) == [(3, 2)]
    with pytest.raises(ShapeError, match=r"disagree on the batch size \(dim 0\): \[3, 4\]"):
        spec.check_shapes([(3, 2), (4, 2)])


def test_unknown_output_shapes_are_none():
    spec = ModelSpec("free", nn.Identity(), [TensorSpec("x", (-1, -1))], [TensorSpec("y", (-1, -1))],
                     (torch.zeros(1, 1),))
    assert spec.check_shapes([(2, 9)]) == [None]


@pytest.mark.parametrize("change,message", [
    (lambda s: setattr(s, "example_inputs", ()), "0 example inputs for 1 input specs"),
    (lambda s: setattr(s, "example_inputs", (torch.zeros(1, 99, 1, 1),)), "does not fit"),
    (lambda s: setattr(s, "outputs", [TensorSpec("latent", (-1,))]), "names must be unique"),
    (lambda s: setattr(s, "module", "not a module"), "not an nn.Module"),
])
def test_validate(change, message):
    spec = dcgan()
    change(spec)
    with pytest.raises(ValueError, match=message):
        spec.validate()
