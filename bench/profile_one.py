"""Runs one benchmark case a few times, for a profiler to capture (ncu -k convt -c 1).

    ncu --kernel-name regex:convt -c 1 --section SpeedOfLight --section Occupancy \
        python -m bench.profile_one kb81
"""

import sys

import torch

import kernels
from bench.problems import DECODER_LAYERS, PROBLEMS

name = sys.argv[1]
shape = PROBLEMS[int(name[2:])] if name.startswith("kb") else DECODER_LAYERS[name]
n, cin, cout, k, hw, s, p, op, d, g = shape
x = torch.rand(n, cin, *hw, device="cuda")
w = torch.randn(cin, cout // g, *k, device="cuda")
for _ in range(3):
    kernels.conv_transpose2d(x, w, None, s, p, op, g, d)
torch.cuda.synchronize()
print("ran", name)
