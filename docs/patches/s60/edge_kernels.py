"""Per-kernel GPU time of one case under torch.profiler (session 60): the window kernel's launch beside the edge
kernel's, so the edge kernel's own cost shows apart from the op's. python3 edge_kernels.py CASE [fp32|fp16]"""

import sys

import torch
from torch.profiler import ProfilerActivity, profile

import kernels
from bench.gpu_time import CASES

n, cin, cout, k, hw, s, p, op, d, g = CASES[sys.argv[1]]
dtype = {"fp32": torch.float32, "fp16": torch.float16}[sys.argv[2]]
xs = [torch.rand(n, cin, *hw, device="cuda", dtype=dtype) for _ in range(2)]
w = torch.randn(cin, cout // g, *k, device="cuda", dtype=dtype)
for i in range(3):
    kernels.conv_transpose2d(xs[i % 2], w, None, s, p, op, g, d)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for i in range(10):
        kernels.conv_transpose2d(xs[i % 2], w, None, s, p, op, g, d)
    torch.cuda.synchronize()
for e in prof.key_averages():
    if e.device_type.name == "CUDA" and e.count:
        print(f"{sys.argv[1]} {sys.argv[2]} {e.key[:60]:60s} x{e.count:3d} {e.device_time_total / e.count:9.1f} us")
