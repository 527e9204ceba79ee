"""The module that runs on our op, and the in-place swap of a model's layers."""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from .ops import conv_transpose2d


class ConvTranspose2d(nn.ConvTranspose2d):
    """``nn.ConvTranspose2d`` with its forward on our op (``torch.ops.convt.conv_transpose2d``).

    Same constructor, parameters and state_dict as the torch module; ``forward``
    takes ``output_size=`` as torch's does.
    """

    def forward(self, input: torch.Tensor, output_size: list[int] | None = None) -> torch.Tensor:
        if self.padding_mode != "zeros":
            raise ValueError("Only 'zeros' padding mode is supported for ConvTranspose2d")
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, 2, self.dilation
        )
        # ops.conv_transpose2d: the typed entry for plain eager calls, torch.ops otherwise
        return conv_transpose2d(
            input, self.weight, self.bias, self.stride, self.padding, tuple(output_padding), self.groups, self.dilation
        )

    @classmethod
    def from_module(cls, m: nn.ConvTranspose2d) -> "ConvTranspose2d":
        """A module of this class that shares ``m``'s parameters and buffers (no copy)."""
        if not isinstance(m, nn.ConvTranspose2d):
            raise TypeError(f"from_module expects an nn.ConvTranspose2d, got {type(m).__name__}")
        return _recast(m, cls)


def _recast(m: nn.Module, cls: type) -> nn.Module:
    new = cls.__new__(cls)
    # Shallow: the same Parameter objects, but containers of our own, so that
    # later changes to one module's registrations do not leak into the other.
    new.__dict__.update({k: copy.copy(v) if isinstance(v, dict) else v for k, v in m.__dict__.items()})
    return new


def layer_config(m: nn.ConvTranspose2d) -> dict[str, Any]:
    return {
        "in_channels": m.in_channels,
        "out_channels": m.out_channels,
        "kernel_size": list(m.kernel_size),
        "stride": list(m.stride),
        "padding": list(m.padding),
        "output_padding": list(m.output_padding),
        "dilation": list(m.dilation),
        "groups": m.groups,
        "bias": m.bias is not None,
        "dtype": str(m.weight.dtype).removeprefix("torch."),
        "device": str(m.weight.device),
    }


def _swappable(m: nn.Module) -> bool:
    # A subclass with a forward of its own does something we cannot know; lazy
    # modules have no shape until their first call.
    return (
        isinstance(m, nn.ConvTranspose2d)
        and type(m).forward is nn.ConvTranspose2d.forward
        and not isinstance(m.weight, nn.parameter.UninitializedParameter)
    )


def swap_conv_transpose2d(model: nn.Module) -> list[dict[str, Any]]:
    """Replaces, in place, every ``nn.ConvTranspose2d`` in ``model`` by ours.

    Walks the whole module tree (Sequential, ModuleList, ModuleDict, custom
    modules); parameters are shared, so state_dict keys and values are unchanged.
    Idempotent. Returns one record per layer of ours in the tree: its qualified
    name ("" for the root) and configuration.
    """
    if type(model) is not ConvTranspose2d and _swappable(model):
        model.__class__ = ConvTranspose2d  # the root has no parent to re-register it in
    swapped: dict[int, nn.Module] = {}
    for parent in list(model.modules()):
        for name, child in list(parent._modules.items()):
            if child is None or isinstance(child, ConvTranspose2d) or not _swappable(child):
                continue
            if id(child) not in swapped:  # a module registered twice stays one module
                swapped[id(child)] = ConvTranspose2d.from_module(child)
            parent._modules[name] = swapped[id(child)]
    return [{"name": name, **layer_config(m)} for name, m in model.named_modules() if isinstance(m, ConvTranspose2d)]


def unswapped_twin(model: nn.Module) -> nn.Module:
    """A copy of the module tree with torch's ConvTranspose2d where ours are.

    Every module is a shallow copy: parameters and buffers are shared, not copied,
    so the twin costs no memory and always holds the served weights.
    """
    memo: dict[int, nn.Module] = {}

    def twin(m: nn.Module) -> nn.Module:
        if id(m) in memo:
            return memo[id(m)]
        t = _recast(m, nn.ConvTranspose2d) if isinstance(m, ConvTranspose2d) else _recast(m, type(m))
        memo[id(m)] = t
        t._modules = {k: (twin(c) if c is not None else None) for k, c in m._modules.items()}
        return t

    return twin(model)


__all__ = ["ConvTranspose2d", "swap_conv_transpose2d", "unswapped_twin", "layer_config"]
