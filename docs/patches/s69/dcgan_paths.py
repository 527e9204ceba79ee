"""Session 69: which CUDA path each of the served dcgan's ConvTranspose2d layers takes at each batch, and whether
image 0's output at batch n has the same bits as image 0 alone (the CUDA service tests' batched-against-one-by-one
check found TF32-level differences). fp32 at PyTorch's default (TF32).

    python3 docs/patches/s69/dcgan_paths.py
"""
import torch
import torch.nn as nn

import kernels
from models.registry import load_model

torch.backends.cudnn.allow_tf32 = True
spec = load_model("dcgan")
m = spec.module.cuda().eval()
ins = {}
layers = [(n, l) for n, l in m.named_modules() if isinstance(l, nn.ConvTranspose2d)]
for n, l in layers:
    l.register_forward_hook(lambda mod, a, out, n=n: ins.__setitem__(n, a[0].detach().clone()))
gen = torch.Generator().manual_seed(3)
z = torch.randn(16, 100, 1, 1, generator=gen).cuda()
with torch.no_grad():
    m(z)
print("| layer | input | " + " | ".join(f"path n={b}" for b in (1, 2, 3, 16)) + " | image 0 same bits at n=2, 3, 16 |")
print("|---|---|---|---|---|---|---|")
for n, l in layers:
    x = ins[n]
    args = (l.stride, l.padding, l.output_padding, l.groups, l.dilation)
    paths = [torch.ops.convt.cuda_path(x[:b], l.weight, *args) for b in (1, 2, 3, 16)]
    alone = kernels.conv_transpose2d(x[:1], l.weight, l.bias, *args)
    same = []
    for b in (2, 3, 16):
        y = kernels.conv_transpose2d(x[:b], l.weight, l.bias, *args)[:1]
        d = (y - alone).abs().max().item()
        same.append("yes" if torch.equal(y, alone) else f"no ({d:.1e}, {(y != alone).float().mean().item():.1%})")
    print(f"| {n} | {list(x.shape[1:])} | " + " | ".join(paths) + " | " + ", ".join(same) + " |")
