"""Random ConvTranspose2d configurations and the float64 reference they are checked against."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from kernels.ops import output_size


def session_seed() -> int:
    """CONVT_TEST_SEED reproduces a failing run; otherwise a fresh seed each run."""
    return int(os.environ.get("CONVT_TEST_SEED", random.SystemRandom().randrange(2**31)))


@dataclass
class Case:
    n: int
    cin: int
    cout: int
    k: tuple[int, int]
    hw: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    output_padding: tuple[int, int]
    dilation: tuple[int, int]
    groups: int
    bias: bool
    unbatched: bool = False
    noncontiguous: bool = False

    def args(self):
        return self.stride, self.padding, self.output_padding, self.groups, self.dilation

    def out_hw(self):
        return output_size(self.hw, self.k, self.stride, self.padding, self.output_padding, self.dilation)

    def tensors(self, dtype, device, gen: torch.Generator):
        """Fresh random input, weight and bias (never zeros), made on the CPU then moved."""
        def rnd(*shape):
            return torch.randn(*shape, generator=gen, dtype=torch.float64)
        mv = lambda t: None if t is None else t.to(device=device, dtype=dtype)  # noqa: E731
        if self.noncontiguous:  # a channel-strided, transposed view: strides no kernel may assume
            x = mv(rnd(self.n, 2 * self.cin, self.hw[1], self.hw[0]))[:, ::2].transpose(2, 3)
        else:
            x = mv(rnd(self.n, self.cin, *self.hw))
        if self.unbatched:
            x = x[0]
        w = rnd(self.cin, self.cout // self.groups, *self.k)
        b = rnd(self.cout) if self.bias else None
        xd = x
        return xd, mv(w), mv(b)


def reference(x, w, b, case: Case, device: str = "cpu") -> torch.Tensor:
    """PyTorch's conv_transpose2d in float64 on the CPU (or ``device``), on the very values given."""
    to64 = lambda t: None if t is None else t.detach().to(device, torch.float64)  # noqa: E731
    return F.conv_transpose2d(to64(x), to64(w), to64(b), *case.args())


# Worst relative error seen per (device, dtype) in this session, for the summary.
WORST: dict[str, tuple[float, int]] = {}


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    if ref.numel() == 0:
        return 0.0
    ref = ref.to(out.device)  # compare where the output lives: KernelBench outputs are GBs
    d = out.detach().double() - ref
    err = float(d.norm() / ref.norm().clamp_min(1e-300))
    key = f"{out.device.type} {str(out.dtype).removeprefix('torch.')}"
    if out.device.type == "cuda":
        if out.dtype == torch.float32 and torch.backends.cudnn.allow_tf32:
            key += "-tf32"
        key += f" {os.environ.get('CONVT_CUDA_ALGO', 'auto')}"
    worst, count = WORST.get(key, (0.0, 0))
    WORST[key] = (max(worst, err), count + 1)
    return err


def random_case(rng: random.Random, max_hw: int = 9, max_ch: int = 3) -> Case:
    """A legal random configuration across the whole argument space."""
    while True:
        s = (rng.randint(1, 5), rng.randint(1, 5))
        d = (rng.randint(1, 3), rng.randint(1, 3))
        k = (rng.randint(1, 5), rng.randint(1, 5))
        p = (rng.randint(0, 3), rng.randint(0, 3))
        op = tuple(rng.randrange(max(si, di)) for si, di in zip(s, d))  # every legal output_padding
        g = rng.choice([1, 1, 2, 4, "dw"])
        if g == "dw":
            cin = rng.randint(1, 6)
            g, cout = cin, cin * rng.choice([1, 2])
        else:
            cin, cout = g * rng.randint(1, max_ch), g * rng.randint(1, max_ch)
        hw = (rng.randint(1, max_hw), rng.randint(1, max_hw))
        case = Case(
            n=rng.choice([0, 1, 1, 2, 3]), cin=cin, cout=cout, k=k, hw=hw, stride=s, padding=p,
            output_padding=op, dilation=d, groups=g, bias=rng.random() < 0.5,
            unbatched=rng.random() < 0.15, noncontiguous=rng.random() < 0.2,
        )
        if case.unbatched:
            case.n = 1
        if min(case.out_hw()) > 0:
            return case


def poisoned_out(case: Case, dtype, device) -> torch.Tensor:
    """An output buffer full of NaN: any element the kernel fails to write stays NaN."""
    h, w = case.out_hw()
    shape = (case.cout, h, w) if case.unbatched else (case.n, case.cout, h, w)
    return torch.full(shape, float("nan"), dtype=dtype, device=device)
