"""The models convt-serve knows, and the loader for a user's own.

Pure PyTorch: nothing here knows of HTTP. ``load_model(name, weights)`` returns a
ModelSpec whose module still holds torch's ConvTranspose2d; the caller swaps.
"""

from .registry import DEFAULT_MODEL, INIT_SEED, ModelLoadError, available, load_model, resolve
from .spec import ModelSpec, ShapeError, TensorSpec, numel
from .weights import WeightsError, load_weights, read_state_dict

__all__ = [
    "DEFAULT_MODEL",
    "INIT_SEED",
    "ModelLoadError",
    "ModelSpec",
    "ShapeError",
    "TensorSpec",
    "WeightsError",
    "available",
    "load_model",
    "load_weights",
    "numel",
    "read_state_dict",
    "resolve",
]
