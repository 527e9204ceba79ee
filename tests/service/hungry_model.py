"""A test-only user model whose working memory grows as batch**6: batch 1 needs
a few bytes, batch 1000 more than any machine has. Its allocation fails for real
(torch's CPU allocator or CUDA's), so the server's out-of-memory path runs as it
would in production."""

from __future__ import annotations

import torch
from torch import nn

import models


class Hungry(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 2, 3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        workspace = x.new_empty(x.shape[0] ** 6)  # batch 1000: 1e18 elements, 4 EB
        return self.up(x) + workspace[:1].zero_()


def factory() -> models.ModelSpec:
    return models.ModelSpec.from_example(Hungry(), torch.randn(1, 4, 5, 5), name="hungry")
