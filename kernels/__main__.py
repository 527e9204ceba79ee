"""``python -m kernels selftest`` (parity on every available device, build info)
and ``python -m kernels build`` (build or load the extensions, print build info)."""

from __future__ import annotations

import argparse
import json
import logging
import sys

# (N, Cin, Cout, kernel, H x W, stride, padding, output_padding, dilation, groups, bias)
SELFTEST_CONFIGS = [
    (2, 8, 6, (3, 3), (9, 7), 1, 0, 0, 1, 1, True),
    (1, 16, 8, (4, 4), (5, 5), 2, 1, 0, 1, 1, False),
    (3, 8, 12, (3, 5), (6, 11), (2, 3), (1, 2), (1, 0), (2, 1), 4, True),
    (2, 6, 12, (3, 3), (4, 6), 5, 1, 4, 2, 1, False),
    (2, 12, 12, (4, 4), (7, 7), 2, 1, 1, 1, 12, True),
]


# TF32 against float64 (the bound; kernels.parity's 3e-3 compares against PyTorch's own TF32 result).
SELFTEST_TF32_TOL = 1e-3


def _selftest() -> int:
    import torch

    import kernels
    from kernels.parity import compare, tolerance

    devices = ["cpu"] + (["cuda"] if "cuda" in kernels.build_info()["backends"] and torch.cuda.is_available() else [])
    ok = True
    tf32_before = torch.backends.cudnn.allow_tf32
    try:
        for device in devices:
            # fp32 on CUDA follows cuDNN's TF32 switch, so both of its settings are checked: strict fp32 to fp32's
            # tolerance, TF32 (PyTorch's default, tensor-core paths) to TF32's.
            modes = [(torch.float32, False)] + ([(torch.float32, True)] if device == "cuda" else [])
            modes += [(torch.float64, False)] + ([(torch.float16, False), (torch.bfloat16, False)] if device == "cuda" else [])
            for dtype, tf32 in modes:
                torch.backends.cudnn.allow_tf32 = tf32
                # against float64: our kernel's own precision
                tol = SELFTEST_TF32_TOL if tf32 else tolerance(dtype, torch.device("cpu"))
                name = "tf32" if tf32 else str(dtype)[6:]
                for n, cin, cout, k, hw, s, p, op, d, g, b in SELFTEST_CONFIGS:
                    x = torch.randn(n, cin, *hw, device=device, dtype=dtype)
                    w = torch.randn(cin, cout // g, *k, device=device, dtype=dtype)
                    bias = torch.randn(cout, device=device, dtype=dtype) if b else None
                    ours = kernels.conv_transpose2d(x, w, bias, s, p, op, g, d)
                    ref = torch.nn.functional.conv_transpose2d(x.double().cpu(), w.double().cpu(),
                                                               None if bias is None else bias.double().cpu(), s, p, op, g,
                                                               d)
                    r = compare(ours.cpu(), ref, tol)
                    ok &= r["passed"]
                    print(f"{'ok  ' if r['passed'] else 'FAIL'} {device:4} {name:8} x{list(x.shape)} w{list(w.shape)} "
                          f"s={s} p={p} op={op} d={d} g={g} bias={b}: rel {r['rel_error']:.2e} (tol {tol:.0e})")
    finally:
        torch.backends.cudnn.allow_tf32 = tf32_before
    print(json.dumps(kernels.build_info(), indent=2))
    print("selftest passed" if ok else "selftest FAILED")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernels")
    parser.add_argument("command", choices=["selftest", "build"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.command == "build":
        import kernels

        print(json.dumps(kernels.build_info(), indent=2))
        return 0
    return _selftest()


if __name__ == "__main__":
    sys.exit(main())
