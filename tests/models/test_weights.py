"""Weights files: safetensors and torch state_dicts load; anything else, or keys
that do not match, is refused with a message that says why."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file

import models
from models import ModelLoadError, WeightsError, load_weights


def fresh_state(name: str, seed: int = 99) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {k: (torch.randn(v.shape, generator=g) if v.is_floating_point() else v.clone())
            for k, v in models.load_model(name).module.state_dict().items()}


@pytest.mark.parametrize("fmt", ["safetensors", "pt", "pt-wrapped", "safetensors-no-suffix"])
def test_round_trip(tmp_path, fmt):
    state = fresh_state("dcgan")
    path = tmp_path / ("w.safetensors" if fmt == "safetensors" else "w.bin")
    if fmt.startswith("safetensors"):
        save_file(state, str(path))
    else:
        torch.save({"state_dict": state} if fmt == "pt-wrapped" else state, path)
    spec = models.load_model("dcgan", weights=path)
    for k, v in spec.module.state_dict().items():
        assert torch.equal(v, state[k]), k
    assert spec.weights["source"] == "file" and len(spec.weights["sha256"]) == 64
    assert spec.weights["format"] == ("safetensors" if fmt.startswith("safetensors") else "torch")


def test_missing_and_unexpected_keys(tmp_path):
    state = fresh_state("dcgan")
    del state["main.1.running_var"]
    state["main.99.weight"] = torch.zeros(1)
    path = tmp_path / "w.safetensors"
    save_file(state, str(path))
    with pytest.raises(ModelLoadError, match=r"missing keys \['main.1.running_var'\], unexpected keys \['main.99.weight'\]"):
        models.load_model("dcgan", weights=path)


def test_shape_mismatch(tmp_path):
    state = fresh_state("kernelbench-81")
    state["conv_transpose2d.weight"] = torch.zeros(32, 64, 3, 5)
    path = tmp_path / "w.pt"
    torch.save(state, path)
    with pytest.raises(WeightsError, match=r"conv_transpose2d.weight: file \[32, 64, 3, 5\], model \[32, 64, 3, 3\]"):
        load_weights(models.load_model("kernelbench-81").module, path)


def test_a_pickled_module_is_refused(tmp_path):
    path = tmp_path / "model.pt"
    torch.save(models.load_model("kernelbench-81").module, path)  # the whole module: arbitrary pickle
    with pytest.raises(WeightsError, match="weights_only=True refuses"):
        models.read_state_dict(path)


@pytest.mark.parametrize("content,message", [
    (None, "does not exist"),
    (b"not a weights file at all", "neither safetensors nor a torch.save file"),
])
def test_unreadable_files(tmp_path, content, message):
    path = tmp_path / "w.bin"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(WeightsError, match=message):
        models.read_state_dict(path)


def test_corrupt_safetensors(tmp_path):
    path = tmp_path / "w.safetensors"
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{broken")
    with pytest.raises(WeightsError, match="not a readable safetensors file"):
        models.read_state_dict(path)


def test_a_list_is_not_a_state_dict(tmp_path):
    path = tmp_path / "w.pt"
    torch.save([torch.zeros(1)], path)
    with pytest.raises(WeightsError, match="does not hold a state_dict"):
        models.read_state_dict(path)
