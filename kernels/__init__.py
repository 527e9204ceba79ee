"""convt-serve's ConvTranspose2d: a CPU and CUDA op of our own, registered with torch.

Importing the package builds (first time, minutes) or loads (afterwards, instant)
the extensions that register ``torch.ops.convt.conv_transpose2d``.
"""

from . import _build

_build.ensure_loaded()

from .nn import ConvTranspose2d, swap_conv_transpose2d, unswapped_twin  # noqa: E402
from .ops import conv_transpose2d  # noqa: E402
from .parity import check_parity  # noqa: E402


def build_info() -> dict:
    """Which backends are built, CUDA archs, torch/CUDA versions, build dir and seconds."""
    import torch

    s = _build.STATE
    return {
        "backends": list(s.backends),
        "skipped": dict(s.skipped),
        "cuda_archs": s.cuda_archs,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
        "build_dir": s.build_dir,
        "build_seconds": dict(s.build_seconds),
        "from_cache": dict(s.cached),
    }


__all__ = [
    "conv_transpose2d",
    "ConvTranspose2d",
    "swap_conv_transpose2d",
    "unswapped_twin",
    "check_parity",
    "build_info",
]
