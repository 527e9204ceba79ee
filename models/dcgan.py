"""The DCGAN generator (Radford et al. 2016), as in pytorch/examples/dcgan.

Layer names match that example's ``netG`` so its checkpoints load unchanged.
"""

from __future__ import annotations

import torch
from torch import nn

from .spec import ModelSpec, TensorSpec

LATENT = 100


class Generator(nn.Module):
    """latent (N, 100, 1, 1) -> image (N, 3, 64, 64) in [-1, 1]."""

    def __init__(self, nz: int = LATENT, ngf: int = 64, nc: int = 3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),  # 1x1 -> 4x4
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),  # -> 8x8
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),  # -> 16x16
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),  # -> 32x32
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),  # -> 64x64
            nn.Tanh(),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.main(z)


def dcgan_init(m: nn.Module) -> None:
    """The paper's initialisation: conv N(0, 0.02), batch-norm scale N(1, 0.02)."""
    if isinstance(m, nn.ConvTranspose2d):
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


def build() -> ModelSpec:
    g = Generator()
    g.apply(dcgan_init)
    return ModelSpec(
        name="dcgan",
        module=g,
        inputs=[TensorSpec("latent", (-1, LATENT, 1, 1))],
        outputs=[TensorSpec("image", (-1, 3, 64, 64))],
        example_inputs=(torch.randn(2, LATENT, 1, 1),),
        description="DCGAN generator: latent (N, 100, 1, 1) -> image (N, 3, 64, 64), tanh output in [-1, 1]",
    )
