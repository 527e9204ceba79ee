"""Numerical parity of our op against PyTorch's, per layer and for a whole model.

Ours and PyTorch's run on the same device, dtype and fresh random inputs; the
report is plain data (JSON-serializable) so a health endpoint can return it.
The measure is the relative error ||ours - ref|| / ||ref|| against a tolerance
chosen by dtype and precision mode: with TF32 allowed, PyTorch's reference on CUDA
itself runs in TF32, so the two differ by TF32 rounding even where ours is exact.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch
from torch import nn
from torch.utils import _pytree

from .nn import ConvTranspose2d, layer_config, unswapped_twin

# Relative-error tolerances per layer; a whole model compounds several layers.
LAYER_TOLERANCES: dict[str, float] = {
    "float64": 1e-10,
    "float32": 1e-5,
    "float32-tf32": 3e-3,
    "float16": 1e-2,
    "bfloat16": 2e-2,
}
MODEL_TOLERANCE_FACTOR = 4.0
DEFAULT_SPATIAL = 8  # input size for a layer the example input never reaches


def precision_key(dtype: torch.dtype, device: torch.device) -> str:
    name = str(dtype).removeprefix("torch.")
    if dtype == torch.float32 and device.type == "cuda" and torch.backends.cudnn.allow_tf32:
        return "float32-tf32"
    return name


def tolerance(dtype: torch.dtype, device: torch.device, overrides: dict[str, float] | None = None) -> float:
    key = precision_key(dtype, device)
    table = {**LAYER_TOLERANCES, **(overrides or {})}
    if key not in table:
        raise ValueError(f"no parity tolerance for {key}; known: {sorted(table)}")
    return table[key]


def compare(ours: torch.Tensor, ref: torch.Tensor, tol: float) -> dict[str, Any]:
    """Max abs error, relative error and verdict; any non-finite value fails."""
    if ours.shape != ref.shape:
        return {"max_abs_error": None, "rel_error": None, "tolerance": tol, "passed": False,
                "detail": f"shape {list(ours.shape)} != reference {list(ref.shape)}"}
    d, r = ours.double(), ref.double()
    diff = d - r
    finite = bool(torch.isfinite(d).all()) and bool(torch.isfinite(r).all())
    max_abs = float(diff.abs().max()) if diff.numel() else 0.0
    ref_norm = float(torch.linalg.vector_norm(r)) if r.numel() else 0.0
    rel = float(torch.linalg.vector_norm(diff)) / max(ref_norm, torch.finfo(torch.float64).tiny) if diff.numel() else 0.0
    out = {"max_abs_error": max_abs if finite else None, "rel_error": rel if finite else None,
           "tolerance": tol, "passed": finite and rel <= tol}
    if not finite:
        out["detail"] = "non-finite values in output"
    return out


def random_like(t: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """A fresh random tensor of t's shape, dtype and device (never zeros)."""
    if t.is_floating_point():
        x = torch.randn(t.shape, dtype=torch.float32, device="cpu", generator=generator)
        return x.to(device=t.device, dtype=t.dtype)
    if t.dtype == torch.bool:
        return torch.randint(0, 2, t.shape, generator=generator).bool().to(t.device)
    high = max(int(t.max()) + 1, 2) if t.numel() else 2
    return torch.randint(0, high, t.shape, generator=generator, dtype=t.dtype).to(t.device)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _first_param(model: nn.Module) -> torch.Tensor:
    for p in model.parameters():
        return p
    raise ValueError("check_parity: model has no parameters")


def _layer_inputs(model: nn.Module, inputs: tuple) -> dict[str, tuple[torch.Size, Any]]:
    """Input shape (and output_size argument) of each of our layers on `inputs`."""
    seen: dict[str, tuple[torch.Size, Any]] = {}
    hooks = []
    for name, m in model.named_modules():
        if isinstance(m, ConvTranspose2d):
            def hook(mod, args, kwargs, name=name):
                out_size = args[1] if len(args) > 1 else kwargs.get("output_size")
                seen.setdefault(name, (args[0].shape, out_size))
            hooks.append(m.register_forward_pre_hook(hook, with_kwargs=True))
    try:
        model(*inputs)
    finally:
        for h in hooks:
            h.remove()
    return seen


def check_parity(
    model: nn.Module,
    example_inputs: torch.Tensor | tuple | None = None,
    *,
    layers: bool = True,
    whole_model: bool = True,
    tolerances: dict[str, float] | None = None,
    generator: torch.Generator | None = None,
    run: Callable[[Callable[[], Any]], Any] | None = None,
) -> dict[str, Any]:
    """Runs ours against PyTorch's for each swapped layer and for the whole model.

    ``example_inputs`` gives the shapes, dtypes and device of the model's inputs;
    their values are replaced by fresh random ones. The whole model is compared
    with its unswapped twin (same parameters, torch's ConvTranspose2d). ``run``
    wraps each forward (the service passes its own executor path). Returns a
    JSON-serializable dict: ``passed``, per-layer reports and the model report.
    """
    t_start = time.perf_counter()
    param = _first_param(model)
    device, dtype = param.device, param.dtype
    call = run or (lambda f: f())
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    was_training = model.training
    model.eval()  # parity must not move BatchNorm statistics
    report: dict[str, Any] = {"device": str(device), "dtype": str(dtype).removeprefix("torch."),
                              "precision": precision_key(dtype, device), "layers": [], "model": None}
    try:
        with torch.no_grad():
            shapes = _layer_inputs(model, example_inputs) if (layers and example_inputs) else {}
            if layers:
                for name, m in model.named_modules():
                    if isinstance(m, ConvTranspose2d):
                        report["layers"].append(_check_layer(name, m, shapes.get(name), tolerances, generator, call))
            if whole_model and example_inputs:
                report["model"] = _check_model(model, example_inputs, tolerances, generator, call)
    finally:
        model.train(was_training)
    checks = report["layers"] + ([report["model"]] if report["model"] else [])
    report["passed"] = all(c["passed"] for c in checks)
    report["seconds"] = round(time.perf_counter() - t_start, 4)
    return report


def _check_layer(name, m: ConvTranspose2d, seen, tolerances, generator, call) -> dict[str, Any]:
    w = m.weight
    shape, out_size = seen if seen else ((1, m.in_channels, DEFAULT_SPATIAL, DEFAULT_SPATIAL), None)
    x = random_like(torch.empty(shape, dtype=w.dtype, device=w.device), generator)
    t0 = time.perf_counter()
    ours = call(lambda: m(x, out_size))
    ref = call(lambda: nn.ConvTranspose2d.forward(m, x, out_size))
    _sync(w.device)
    result = compare(ours, ref, tolerance(w.dtype, w.device, tolerances))
    return {"name": name, "config": layer_config(m), "input_shape": list(shape),
            "input_source": "example" if seen else "default", **result,
            "seconds": round(time.perf_counter() - t0, 4)}


def _check_model(model, example_inputs, tolerances, generator, call) -> dict[str, Any]:
    param = _first_param(model)
    inputs = tuple(random_like(t, generator) if isinstance(t, torch.Tensor) else t for t in example_inputs)
    twin = unswapped_twin(model)
    t0 = time.perf_counter()
    ours = _pytree.tree_leaves(call(lambda: model(*inputs)))
    ref = _pytree.tree_leaves(call(lambda: twin(*inputs)))
    _sync(param.device)
    tol = tolerance(param.dtype, param.device, tolerances) * MODEL_TOLERANCE_FACTOR
    results = [compare(o, r, tol) for o, r in zip(ours, ref) if isinstance(o, torch.Tensor)]
    worst = max(results, key=lambda r: (not r["passed"], r["rel_error"] or 0.0)) if results else \
        {"max_abs_error": 0.0, "rel_error": 0.0, "tolerance": tol, "passed": True}
    return {"name": "<model>", "input_shapes": [list(t.shape) for t in inputs if isinstance(t, torch.Tensor)],
            **worst, "passed": len(ours) == len(ref) and all(r["passed"] for r in results),
            "seconds": round(time.perf_counter() - t0, 4)}
