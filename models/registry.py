"""Named models, and the loader that turns a name (or a user's factory) into a
ModelSpec holding initialised or loaded weights."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable

import torch

from . import dcgan, kernelbench
from .spec import ModelSpec
from .weights import WeightsError, load_weights

DEFAULT_MODEL = "dcgan"
INIT_SEED = 0

REGISTRY: dict[str, Callable[[], ModelSpec]] = {"dcgan": dcgan.build, **kernelbench.BUILDERS}


class ModelLoadError(ValueError):
    """The model cannot be built or its weights cannot be loaded."""


def available() -> list[str]:
    return list(REGISTRY)


def resolve(ref: str) -> Callable[[], ModelSpec]:
    """A registered name, or ``package.module:factory`` for a model of the user's own."""
    if ref in REGISTRY:
        return REGISTRY[ref]
    if ":" not in ref:
        raise ModelLoadError(f"unknown model {ref!r}; choose one of {available()} or give package.module:factory")
    module_name, _, attr = ref.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelLoadError(f"cannot import {module_name!r} for model {ref!r}: {exc}") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ModelLoadError(f"{module_name!r} has no callable {attr!r} (model {ref!r})")
    return factory


def load_model(ref: str = DEFAULT_MODEL, weights: str | Path | None = None, seed: int = INIT_SEED) -> ModelSpec:
    """Builds the model; its parameters come from ``weights`` or, without, from ``seed``.

    A user's factory takes no arguments and returns a ModelSpec (see
    ``ModelSpec.from_example`` for the short way to make one).
    """
    factory = resolve(ref)
    # A fixed seed makes a weightless model the same in every process (the
    # tests compare a server's answers with a model built locally).
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        spec = factory()
    if not isinstance(spec, ModelSpec):
        raise ModelLoadError(f"factory for model {ref!r} returned a {type(spec).__name__}, not a models.ModelSpec")
    try:
        spec.validate()
    except ValueError as exc:
        raise ModelLoadError(str(exc)) from exc
    if weights is not None:
        try:
            spec.weights = load_weights(spec.module, weights)
        except WeightsError as exc:
            raise ModelLoadError(f"model {spec.name!r}: {exc}") from exc
    else:
        spec.weights = {"source": "seed", "seed": seed,
                        "note": f"no weights file: parameters initialised from torch.manual_seed({seed})"}
    spec.module.eval()
    return spec
