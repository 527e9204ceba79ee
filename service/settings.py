"""The server's one settings class: CLI flags and CONVT_* environment variables.

CLI flags win over environment variables, which win over defaults.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import torch
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, CliApp, CliSuppress, SettingsConfigDict

MiB = 1 << 20
TOLERANCE_KEYS = ("float64", "float32", "float32-tf32", "float16", "bfloat16")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


class Settings(BaseSettings):
    """convt-serve: Open Inference Protocol (v2) server for ConvTranspose2d models."""

    model_config = SettingsConfigDict(
        env_prefix="CONVT_", cli_prog_name="convt-serve", cli_kebab_case=True, cli_implicit_flags=True,
        protected_namespaces=(), extra="ignore",
    )

    model: str = Field("dcgan", description="a registered model (dcgan, kernelbench-57/65/69/71/75/78/81) "
                                            "or package.module:factory")
    weights: Path | None = Field(None, description="safetensors file or torch state_dict; without it, "
                                                   "parameters come from a fixed seed")
    device: str = Field("auto", description="auto (cuda when available, else cpu), cpu, cuda or cuda:N")
    dtype: Literal["fp32", "fp16", "bf16"] = Field("fp32", description="dtype the model is served in")
    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(8000, ge=0, le=65535, description="port to listen on")
    max_request_bytes: int = Field(64 * MiB, gt=0, description="largest request body accepted (413 above)")
    max_output_bytes: int = Field(256 * MiB, gt=0, description="largest output tensor computed (400 above)")
    parity_tolerance: dict[str, float] = Field(
        default_factory=dict,
        description=f"relative-error tolerance overrides by precision, JSON or key=value; keys {list(TOLERANCE_KEYS)}")
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="log level")
    max_batch_size: int = Field(32, ge=1, le=4096, description="dynamic batching: most rows concatenated into "
                                                               "one forward pass (1 turns batching off)")
    max_queue_delay_us: int = Field(200, ge=0, le=10_000_000, description="dynamic batching: longest a request "
                                                                        "waits for company, microseconds")
    max_queue_size: int = Field(256, ge=1, le=1_000_000, description="requests waiting for the device before "
                                                                    "new ones get 429 with Retry-After")
    cuda_graph_shapes: int = Field(
        32, ge=0, le=1024,
        description="on a CUDA device, the forward passes of up to this many distinct input shapes (batch included) "
                    "are captured as CUDA graphs the first time each is seen and replayed after: one launch instead of "
                    "one per op; only batches of at most 4 MiB of input; 0 turns capture off")
    switch_interval_us: int = Field(
        5000, ge=50, le=100_000,
        description="the interpreter's GIL switch interval, microseconds (Python's default 5000): the event loop and "
                    "the device thread share the GIL, and a thread that wants it back waits up to this long")
    workers: int | None = Field(None, ge=1, le=64, description="server processes sharing the port, worker i on "
                                                             "cuda:i (default: one per visible GPU, or 1 on the CPU)")
    frontends: int = Field(
        1, ge=1, le=64,
        description="HTTP front-end processes sharing the port, all handing decoded tensors to one device process "
                    "that batches for them (one process's event loop, not the GPU, bounds its requests per second); "
                    "1: one process does both")
    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        v = v.strip().lower()
        if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", v):
            raise ValueError(f"device must be auto, cpu, cuda or cuda:N, not {v!r}")
        return v

    @field_validator("parity_tolerance")
    @classmethod
    def _tolerance(cls, v: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(v) - set(TOLERANCE_KEYS))
        if unknown:
            raise ValueError(f"unknown parity tolerance keys {unknown}; known: {list(TOLERANCE_KEYS)}")
        if any(not (t > 0) for t in v.values()):
            raise ValueError(f"parity tolerances must be > 0, got {v}")
        return v

    @model_validator(mode="after")
    def _workers_need_devices(self) -> "Settings":
        if (self.workers or 1) > 1 and re.fullmatch(r"cuda:\d+", self.device):
            raise ValueError(f"--device {self.device} pins one GPU but --workers is {self.workers}: use --device cuda "
                             f"(worker i serves on cuda:i) or --workers 1")
        return self

    @model_validator(mode="after")
    def _frontends_one_device(self) -> "Settings":
        if self.frontends > 1 and (self.workers or 1) > 1:
            raise ValueError(f"--frontends {self.frontends} feeds one device process: it needs --workers 1, "
                             f"not {self.workers}")
        return self

    def torch_device(self) -> torch.device:
        """The device to serve on; ``auto`` picks CUDA only where our CUDA kernel is built."""
        if self.device == "auto":
            import kernels

            use_cuda = torch.cuda.is_available() and "cuda" in kernels.build_info()["backends"]
            return torch.device("cuda" if use_cuda else "cpu")
        return torch.device(self.device)

    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    # Access, limits and shutdown (service/auth.py, service/limits.py).
    # The token's flag is left out of --help: the environment is its place, since
    # argv is visible to every user of the machine in ps. SecretStr keeps it out
    # of reprs and logs.
    api_token: CliSuppress[SecretStr | None] = Field(
        None, description="CONVT_API_TOKEN: when set, every endpoint but /v2/health/live and /v2/health/ready "
                          "needs 'Authorization: Bearer <token>' (401 otherwise)")
    max_tensor_elements: int = Field(1 << 26, gt=0, description="most elements one input tensor may declare, "
                                                                 "checked on its shape before decoding (400 above)")
    request_timeout_s: float = Field(60.0, ge=0, description="seconds an inference may take, queueing included, "
                                                             "before it is answered 504 (0: no limit)")
    access_log: bool = Field(False, description="log a line per HTTP request (uvicorn's access log; off by "
                                                "default: /metrics counts requests, and the line costs about a "
                                                "tenth of a small request's server time)")
    shutdown_timeout_s: float = Field(20.0, gt=0, description="on SIGTERM, seconds to finish in-flight requests "
                                                              "before closing their connections")

    @field_validator("api_token")
    @classmethod
    def _token(cls, v: SecretStr | None) -> SecretStr | None:
        # fail closed: an empty CONVT_API_TOKEN (a secret that did not mount) must not mean "no auth"
        if v is None:
            return v
        token = v.get_secret_value()
        if not token.strip():
            raise ValueError("CONVT_API_TOKEN is set but empty; unset it to serve without auth")
        if not (token.isascii() and token.isprintable() and " " not in token):
            raise ValueError("CONVT_API_TOKEN must be printable ASCII without spaces (it travels in an HTTP header)")
        return v


def parse(argv: list[str] | None = None) -> Settings:
    """Settings from ``argv`` (default: sys.argv[1:]) and the environment."""
    import sys

    return CliApp.run(Settings, cli_args=sys.argv[1:] if argv is None else argv)
