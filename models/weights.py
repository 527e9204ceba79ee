"""Loading served weights: a safetensors file or a state_dict saved by torch.

torch files are read with ``weights_only=True``: tensors and plain containers
only, never an arbitrary pickle. The file must name exactly the module's keys;
anything else is refused with the lists of missing and unexpected keys.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any, Mapping

import torch
from torch import nn


class WeightsError(ValueError):
    """The weights file cannot be read or does not match the model."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _is_safetensors(path: Path) -> bool:
    if path.suffix == ".safetensors":
        return True
    with path.open("rb") as f:
        head = f.read(9)
    # 8-byte little-endian header length, then the JSON header
    return len(head) == 9 and head[8:9] == b"{" and not head.startswith(b"PK")


def read_state_dict(path: str | Path) -> tuple[dict[str, torch.Tensor], str]:
    """The file's tensors by name, and the format it was read as."""
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"weights file {path} does not exist")
    if _is_safetensors(path):
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            return load_file(str(path), device="cpu"), "safetensors"
        except (SafetensorError, OSError, ValueError) as exc:
            raise WeightsError(f"weights file {path} is not a readable safetensors file: {exc}") from exc
    with path.open("rb") as f:
        magic = f.read(2)
    if magic != b"PK" and magic[:1] != b"\x80":  # torch.save's zip archive, or a legacy pickle
        raise WeightsError(f"weights file {path} is neither safetensors nor a torch.save file")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        why = str(exc).split("WeightsUnpickler error:")[-1].strip().splitlines()[0]
        raise WeightsError(f"weights file {path} holds more than tensors and plain containers, which "
                           f"weights_only=True refuses (save model.state_dict(), not the model): {why}") from exc
    except (RuntimeError, OSError, EOFError, ValueError) as exc:
        raise WeightsError(f"weights file {path} is neither safetensors nor a torch.save file: {exc}") from exc
    if isinstance(obj, Mapping) and set(obj) == {"state_dict"}:
        obj = obj["state_dict"]
    if not isinstance(obj, Mapping) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items()):
        raise WeightsError(f"weights file {path} does not hold a state_dict (a mapping of names to tensors); "
                           f"got {type(obj).__name__}")
    return dict(obj), "torch"


def load_weights(module: nn.Module, path: str | Path) -> dict[str, Any]:
    """Loads the file into ``module`` (strict) and returns its provenance."""
    state, fmt = read_state_dict(path)
    expected = module.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise WeightsError(f"weights file {path} does not match the model: missing keys {missing}, "
                           f"unexpected keys {unexpected}")
    mismatched = [f"{k}: file {list(v.shape)}, model {list(expected[k].shape)}"
                  for k, v in state.items() if v.shape != expected[k].shape]
    if mismatched:
        raise WeightsError(f"weights file {path} does not match the model: shape mismatch for {mismatched}")
    module.load_state_dict(state, strict=True)
    return {"source": "file", "path": str(Path(path).resolve()), "format": fmt, "sha256": _sha256(Path(path))}
