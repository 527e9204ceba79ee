"""Start-up refusals: bad settings, unknown models and weights that do not fit
end the process with a clear message instead of serving something wrong."""

from __future__ import annotations

import torch
from safetensors.torch import save_file

import models

from .conftest import run_to_exit

EXIT_BAD_SETTINGS = 2
EXIT_STARTUP_FAILED = 3


def test_invalid_device_setting():
    p = run_to_exit("--model", "dcgan", "--device", "gpu")
    assert p.returncode == EXIT_BAD_SETTINGS
    assert "device must be auto, cpu, cuda or cuda:N, not 'gpu'" in p.stderr


def test_unknown_model():
    p = run_to_exit("--model", "no-such-model")
    assert p.returncode == EXIT_STARTUP_FAILED
    out = p.stdout + p.stderr
    assert "start-up failed: unknown model 'no-such-model'" in out and "kernelbench-81" in out


def test_weights_with_missing_and_unexpected_keys(tmp_path):
    state = models.load_model("kernelbench-75").module.state_dict()
    state["extra.bias"] = torch.zeros(3)
    del state["conv_transpose2d.weight"]
    path = tmp_path / "bad.safetensors"
    save_file(state, str(path))
    p = run_to_exit("--model", "kernelbench-75", "--weights", str(path))
    assert p.returncode == EXIT_STARTUP_FAILED
    out = p.stdout + p.stderr
    assert "missing keys ['conv_transpose2d.weight']" in out and "unexpected keys ['extra.bias']" in out
