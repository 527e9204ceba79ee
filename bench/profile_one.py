"""Runs one benchmark case a few times, for a profiler to capture (ncu -k convt -c 1); fp32 (TF32 as
torch's default allows) unless CONVT_PROFILE_DTYPE is fp16 or bf16.

    ncu --kernel-name regex:convt -c 1 --section SpeedOfLight --section Occupancy \
        python -m bench.profile_one kb81
"""

import os
import sys

import torch

import kernels
from bench.gpu_time import CASES

name = sys.argv[1]
shape = CASES[name]
n, cin, cout, k, hw, s, p, op, d, g = shape
dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[os.environ.get("CONVT_PROFILE_DTYPE", "fp32")]
x = torch.rand(n, cin, *hw, device="cuda", dtype=dtype)
w = torch.randn(cin, cout // g, *k, device="cuda", dtype=dtype)
for _ in range(3):
    kernels.conv_transpose2d(x, w, None, s, p, op, g, d)
torch.cuda.synchronize()
print("ran", name)
