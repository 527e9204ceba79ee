"""The registry: named models, fixed-seed initialisation, user factories."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import models
from models import ModelLoadError, ModelSpec


def tiny_factory() -> ModelSpec:
    """A user's model, built the short way."""
    module = nn.Sequential(nn.ConvTranspose2d(4, 2, 3, stride=2), nn.Sigmoid())
    return ModelSpec.from_example(module, torch.randn(1, 4, 5, 5), name="tiny")


def not_a_spec():
    return nn.Linear(2, 2)


def test_every_registered_model_builds_and_runs_its_example():
    assert models.available()[0] == models.DEFAULT_MODEL == "dcgan"
    assert set(models.available()) == {"dcgan", *(f"kernelbench-{i}" for i in (57, 65, 69, 71, 75, 78, 81))}
    for name in models.available():
        spec = models.load_model(name)
        assert spec.name == name and not spec.module.training
        (out,) = [spec.module(*spec.example_inputs)]
        (expected,) = spec.check_shapes([tuple(t.shape) for t in spec.example_inputs])
        assert tuple(out.shape) == expected and spec.outputs[0].fits(out.shape)


def test_seeded_initialisation_is_reproducible_and_reported():
    a, b = models.load_model("dcgan"), models.load_model("dcgan")
    for (ka, va), (kb, vb) in zip(a.module.state_dict().items(), b.module.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)
    assert a.weights["source"] == "seed" and a.weights["seed"] == models.INIT_SEED
    other = models.load_model("dcgan", seed=1)
    assert not torch.equal(other.module.main[0].weight, a.module.main[0].weight)


def test_loading_leaves_the_global_rng_alone():
    torch.manual_seed(42)
    expected = torch.rand(3)
    torch.manual_seed(42)
    models.load_model("kernelbench-57")
    assert torch.equal(torch.rand(3), expected)


def test_dcgan_is_the_generator_of_the_paper():
    spec = models.load_model("dcgan")
    convs = [m for m in spec.module.modules() if isinstance(m, nn.ConvTranspose2d)]
    assert [(c.in_channels, c.out_channels) for c in convs] == [(100, 512), (512, 256), (256, 128), (128, 64), (64, 3)]
    assert all(c.kernel_size == (4, 4) and c.bias is None for c in convs)
    assert [c.stride for c in convs] == [(1, 1)] + [(2, 2)] * 4
    out = spec.module(torch.randn(2, 100, 1, 1))
    assert out.shape == (2, 3, 64, 64) and out.abs().max() <= 1


def test_user_factory():
    spec = models.load_model("tests.models.test_registry:tiny_factory")
    assert spec.name == "tiny"
    assert [(s.name, s.shape) for s in spec.inputs] == [("input__0", (-1, 4, 5, 5))]
    assert [(s.name, s.shape) for s in spec.outputs] == [("output__0", (-1, 2, 11, 11))]
    assert spec.check_shapes([(7, 4, 5, 5)]) == [(7, 2, 11, 11)]


@pytest.mark.parametrize("ref,message", [
    ("nope", "unknown model 'nope'; choose one of"),
    ("tests.models.no_such_module:f", "cannot import 'tests.models.no_such_module'"),
    ("tests.models.test_registry:missing", "has no callable 'missing'"),
    ("tests.models.test_registry:not_a_spec", "returned a Linear, not a models.ModelSpec"),
])
def test_bad_references(ref, message):
    with pytest.raises(ModelLoadError, match=message):
        models.load_model(ref)
