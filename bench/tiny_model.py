"""dcgan's input and output shapes with a near-free forward: served as
``python -m bench.load --model bench.tiny_model:factory``, what is left of a
request's time is the server's own (HTTP, decode, batching, encode), which a
real forward on a CPU hides."""

from __future__ import annotations

import torch
from torch import nn

import models


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(100, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # materialized here, on the device thread, as a real model's output is by its copy to the host
        return self.up(x).expand(-1, -1, 64, 64).contiguous()


def factory() -> models.ModelSpec:
    return models.ModelSpec(name="tiny", module=Tiny(), example_inputs=(torch.zeros(1, 100, 1, 1),),
                            inputs=[models.TensorSpec("latent", (-1, 100, 1, 1))],
                            outputs=[models.TensorSpec("image", (-1, 3, 64, 64))],
                            description="dcgan's shapes, near-free forward (bench only)")
