"""Settings: CLI flags over CONVT_* variables over defaults, and validation."""

from __future__ import annotations

import pydantic
import pytest
import torch

from service.settings import Settings, parse


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    import os

    for key in list(os.environ):
        if key.startswith("CONVT_") and key not in ("CONVT_BUILD_DIR", "CONVT_BUILD_CUDA", "CONVT_REQUIRE_CUDA",
                                                    "CONVT_CPU_OPENMP"):
            monkeypatch.delenv(key)


def test_defaults():
    s = parse([])
    assert (s.model, s.device, s.dtype, s.host, s.port) == ("dcgan", "auto", "fp32", "127.0.0.1", 8000)
    assert s.weights is None and s.parity_tolerance == {}


def test_env_then_cli(monkeypatch):
    monkeypatch.setenv("CONVT_MODEL", "kernelbench-57")
    monkeypatch.setenv("CONVT_PORT", "9001")
    monkeypatch.setenv("CONVT_DTYPE", "bf16")
    monkeypatch.setenv("CONVT_PARITY_TOLERANCE", '{"bfloat16": 0.05}')
    s = parse(["--port", "9002", "--max-request-bytes", "1024"])
    assert (s.model, s.port, s.max_request_bytes, s.dtype) == ("kernelbench-57", 9002, 1024, "bf16")
    assert s.parity_tolerance == {"bfloat16": 0.05}
    assert s.torch_dtype() == torch.bfloat16


def test_tolerance_overrides_on_the_command_line():
    assert parse(["--parity-tolerance", "float16=0.02"]).parity_tolerance == {"float16": 0.02}
    with pytest.raises(pydantic.ValidationError, match="unknown parity tolerance keys"):
        parse(["--parity-tolerance", "fp16=0.02"])
    with pytest.raises(pydantic.ValidationError, match="must be > 0"):
        parse(["--parity-tolerance", "float32=0"])


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "AUTO"])
def test_devices_accepted(device):
    assert Settings(device=device).device == device.lower()


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "tpu:0"])
def test_devices_refused(device):
    with pytest.raises(pydantic.ValidationError, match="device must be auto, cpu, cuda or cuda:N"):
        Settings(device=device)


def test_cpu_device():
    assert Settings(device="cpu").torch_device() == torch.device("cpu")


def test_workers(monkeypatch):
    assert parse([]).workers is None  # one per visible GPU, decided at start
    monkeypatch.setenv("CONVT_WORKERS", "3")
    assert parse([]).workers == 3 and parse(["--workers", "2"]).workers == 2
    with pytest.raises(pydantic.ValidationError, match="greater than or equal to 1"):
        parse(["--workers", "0"])
    with pytest.raises(pydantic.ValidationError, match="pins one GPU"):
        parse(["--workers", "2", "--device", "cuda:1"])
    assert parse(["--workers", "1", "--device", "cuda:1"]).device == "cuda:1"
