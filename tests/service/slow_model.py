"""A test-only user model whose forward sleeps for as many seconds as the first
value of its input says (at most 60) when the last value is SLOW_MARK: requests
ask for it, the parity checks' random inputs never do.

Served as ``--model tests.service.slow_model:factory``; with CONVT_TEST_SLOW_LOG
naming a file, each forward appends ``start S`` and ``end S`` lines to it, so a
test can tell which requests reached the device and when one is in flight
without guessing from the clock. A row whose last value is POISON_MARK makes the
whole forward raise, as a request the model cannot take would. Nothing of this
lives in production code.
"""

from __future__ import annotations

import os
import time

import torch
from torch import nn

import models

MAX_SLEEP = 60
SLOW_MARK = 4242.0
POISON_MARK = -4343.0


def _mark(line: str) -> None:
    path = os.environ.get("CONVT_TEST_SLOW_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 2, 3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool((x.reshape(x.shape[0], -1)[:, -1] == POISON_MARK).any()):
            raise ValueError("a poisoned row (test model)")
        flat = x.reshape(-1)
        seconds = min(max(float(flat[0]), 0.0), MAX_SLEEP) if float(flat[-1]) == SLOW_MARK else 0.0
        if seconds:
            _mark(f"start {seconds:g}")
            time.sleep(seconds)
            _mark(f"end {seconds:g}")
        return self.up(x)


def factory() -> models.ModelSpec:
    spec = models.ModelSpec.from_example(Slow(), torch.zeros(1, 4, 5, 5), name="slow")
    spec.graph_safe = False  # its forward reads the input's values on the host, sleeps and logs
    return spec
