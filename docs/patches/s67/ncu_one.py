"""Session 67: one variant of the stack kernel (trace_ab.py's build of a convt_stack.cu copy, no main build) run on
one case, for Nsight Compute: python3 docs/patches/s67/ncu_one.py NAME @path/to/convt_stack.cu CASE DTYPE [CALLS]."""
import sys

import torch

sys.path.insert(0, "docs/patches/s64")
import trace_ab  # noqa: E402

name, spec, case, dt = sys.argv[1:5]
calls = int(sys.argv[5]) if len(sys.argv) > 5 else 6
mod = trace_ab.build(name, spec)
n, cin, cout, k, hw, s, p, op, d, g = trace_ab.CASES[case]
dtype = trace_ab.DTYPES[dt]
w = torch.randn(cin, cout // g, *k, device="cuda", dtype=dtype)
xs = [torch.randn(n, cin, *hw, device="cuda", dtype=dtype) for _ in range(5)]
for i in range(calls):
    mod.run(xs[i % 5], w, list(s), list(p), list(op), g, list(d))
torch.cuda.synchronize()
print("ran", calls)
