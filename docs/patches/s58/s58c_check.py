"""Session 58 call C: the window kernel on layers of several rounds (tiles past the first claimed in order with
CONVT_DWIN_DYN=1), against float64, with the output poisoned first (NaN): for compute-sanitizer."""
import os
import torch
import kernels

torch.backends.cudnn.allow_tf32 = True
os.environ["CONVT_CUDA_ALGO"] = "dwin"
cases = [  # n, cin, cout, k, hw, pad, dtype, tma
    (8, 32, 32, (3, 3), (96, 520), (1, 1), torch.float32, "1"),
    (6, 24, 32, (3, 5), (80, 300), (1, 2), torch.float32, "0"),
    (8, 32, 32, (3, 3), (96, 520), (1, 1), torch.float16, "0"),
]
for n, cin, cout, k, hw, p, dt, tma in cases:
    os.environ["CONVT_DWIN_TMA"] = tma
    x = torch.rand(n, cin, *hw, device="cuda", dtype=dt)
    w = torch.randn(cin, cout, *k, device="cuda", dtype=dt)
    b = torch.randn(cout, device="cuda", dtype=dt)
    ref = torch.nn.functional.conv_transpose2d(x.double(), w.double(), b.double(), 1, p)
    torch.empty(ref.shape, device="cuda", dtype=dt).fill_(float("nan"))  # poison the allocator's next block
    y = kernels.conv_transpose2d(x, w, b, 1, p, 0, 1, 1)
    assert torch.isfinite(y).all(), "unwritten elements"
    err = float((y.double() - ref).norm() / ref.norm())
    print(f"{n}x{cin}->{cout} k{k} {tuple(hw)} {dt} tma={tma}: rel err {err:.1e}")
    assert err < (1e-3 if dt == torch.float32 else 1e-2), err
print("s58c check ok")
