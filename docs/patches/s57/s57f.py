"""Session 57 call F: neighbouring strips' skew in the window kernel (CONVT_DWIN_TRACE, experiment tree).
Arguments: case:tma ..."""
import os, sys
import torch
import kernels
from bench.gpu_time import CASES

torch.backends.cudnn.allow_tf32 = True
os.environ["CONVT_CUDA_ALGO"] = "dwin"
for spec in sys.argv[1:]:
    name, tma = spec.split(":")
    n, cin, cout, k, hw, s, p, op, d, g = CASES[name]
    os.environ["CONVT_DWIN_TMA"] = tma
    x = torch.rand(n, cin, *hw, device="cuda")
    w = torch.randn(cin, cout // g, *k, device="cuda")
    for _ in range(3):
        kernels.conv_transpose2d(x, w, None, s, p, op, g, d)
    torch.cuda.synchronize()
    print(f"== {name} TMA={tma}", file=sys.stderr, flush=True)
    for rep in range(2):
        os.environ["CONVT_DWIN_TRACE"] = "1"
        kernels.conv_transpose2d(x, w, None, s, p, op, g, d)
        torch.cuda.synchronize()
        del os.environ["CONVT_DWIN_TRACE"]
