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


def _selftest() -> int:
    import torch

    import kernels
    from kernels.parity import compare, tolerance

    devices = ["cpu"] + (["cuda"] if "cuda" in kernels.build_info()["backends"] and torch.cuda.is_available() else [])
    ok = True
    for device in devices:
        dtypes = [torch.float32, torch.float64] + ([torch.float16, torch.bfloat16] if device == "cuda" else [])
        for dtype in dtypes:
            for n, cin, cout, k, hw, s, p, op, d, g, b in SELFTEST_CONFIGS:
                x = torch.randn(n, cin, *hw, device=device, dtype=dtype)
                w = torch.randn(cin, cout // g, *k, device=device, dtype=dtype)
                bias = torch.randn(cout, device=device, dtype=dtype) if b else None
                ours = kernels.conv_transpose2d(x, w, bias, s, p, op, g, d)
                ref = torch.nn.functional.conv_transpose2d(x.double().cpu(), w.double().cpu(),
                                                           None if bias is None else bias.double().cpu(), s, p, op, g, d)
                tol = tolerance(dtype, torch.device("cpu"))  # against float64: our kernel's own precision
                r = compare(ours.cpu(), ref, tol)
                ok &= r["passed"]
                print(f"{'ok  ' if r['passed'] else 'FAIL'} {device:4} {str(dtype)[6:]:8} x{list(x.shape)} w{list(w.shape)} "
                      f"s={s} p={p} op={op} d={d} g={g} bias={b}: rel {r['rel_error']:.2e} (tol {tol:.0e})")
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
