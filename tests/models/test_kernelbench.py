"""The seven KernelBench problems: parameters as published, output shapes as torch computes them."""

from __future__ import annotations

import pytest
import torch

import models
from models import ShapeError
from models.kernelbench import PROBLEMS, Problem, _output_shapes

# ../shared/reference/kernelbench-convtranspose2d.md, current sizes:
# id: Cin, Cout, kernel, stride, padding, output_padding, dilation, groups
TABLE = {
    57: (64, 64, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    65: (64, 64, (3, 7), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    69: (64, 128, (3, 5), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    71: (32, 32, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    75: (32, 64, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), 4),
    78: (32, 32, (3, 7), (1, 1), (1, 3), (0, 0), (1, 1), 1),
    81: (32, 64, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), 1),
}


@pytest.mark.parametrize("pid", sorted(TABLE))
def test_layer_matches_the_published_problem(pid):
    conv = models.load_model(f"kernelbench-{pid}").module.conv_transpose2d
    cin, cout, k, s, p, op, d, g = TABLE[pid]
    assert (conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, conv.output_padding,
            conv.dilation, conv.groups, conv.bias) == (cin, cout, k, s, p, op, d, g, None)


@pytest.mark.parametrize("pid", sorted(TABLE))
@pytest.mark.parametrize("hw", [(1, 1), (3, 8), (7, 2)])
def test_predicted_output_shape_is_torchs(pid, hw):
    spec = models.load_model(f"kernelbench-{pid}")
    x = torch.randn(2, TABLE[pid][0], *hw)
    (predicted,) = spec.check_shapes([tuple(x.shape)])
    with torch.no_grad():
        assert predicted == tuple(spec.module(x).shape)


def test_state_dict_keys_are_kernelbenchs():
    assert list(models.load_model("kernelbench-81").module.state_dict()) == ["conv_transpose2d.weight"]


def test_an_input_too_small_for_the_layer_is_a_shape_error():
    p = Problem(4, 4, (3, 3), padding=(3, 3))  # H_out = H - 4
    shapes = _output_shapes("padded", p)
    assert shapes([(1, 4, 5, 9)]) == [(1, 4, 1, 5)]
    with pytest.raises(ShapeError, match=r"H x W = 4 x 9 gives an empty output \(0 x 5\)"):
        shapes([(1, 4, 4, 9)])


def test_every_problem_is_registered():
    assert set(PROBLEMS) == set(TABLE)
