"""Session 62: the edge kernel on a second stream beside the window kernel (CONVT_DWIN_BESIDE=1, the default) against
both on the caller's stream (0). Per case and dtype: GPU time (bench.gpu_time's method: a 0.2 ms sleep, then events
around one call) and back-to-back per-call events (bench.run's), the two settings alternated in 6 rounds of 40 calls;
then one profiled call a setting, its kernels placed against the window kernel's start (start, duration, grid,
shared memory), so the overlap shows. Usage: python3 beside.py OUT_DIR CASE[,CASE] fp32|fp16[,..]"""
import json
import os
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import kernels
from bench.gpu_time import CASES


def timed(args_sets, reps, sleep):
    out = []
    for i in range(reps):
        if sleep:
            torch.cuda._sleep(400000)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        kernels.conv_transpose2d(*args_sets[i % len(args_sets)])
        e.record()
        out.append((s, e))
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in out]


def trace(out_dir, tag, args):
    for _ in range(3):
        kernels.conv_transpose2d(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        kernels.conv_transpose2d(*args)
        torch.cuda.synchronize()
    path = os.path.join(out_dir, f"trace-{tag}.json")
    prof.export_chrome_trace(path)
    ks = [e for e in json.load(open(path))["traceEvents"] if e.get("cat") == "kernel"]
    t0 = min(e["ts"] for e in ks if "dwin_kernel" in e["name"])
    for e in sorted(ks, key=lambda e: e["ts"]):
        a = e.get("args", {})
        name = e["name"].split("(")[0].split("::")[-1][:40]
        print(f"  {tag:24s} {name:40s} start {e['ts'] - t0:8.1f} us  dur {e['dur']:8.1f} us  grid {a.get('grid')} "
              f"smem {a.get('shared memory')} regs {a.get('registers per thread')} stream {a.get('stream')}")


def main():
    out_dir, cases, dts = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
    os.environ["CONVT_CUDA_ALGO"] = "auto"
    rows = []
    for name in cases:
        n, cin, cout, k, hw, s, p, op, d, g = CASES[name]
        for dt in dts:
            dtype = {"fp32": torch.float32, "fp16": torch.float16}[dt]
            torch.backends.cudnn.allow_tf32 = True
            w = torch.randn(cin, cout // g, *k, device="cuda", dtype=dtype)
            xs = [torch.rand(n, cin, *hw, device="cuda", dtype=dtype) for _ in range(3)]
            args = [(x, w, None, s, p, op, g, d) for x in xs]
            res = {("0", True): [], ("1", True): [], ("0", False): [], ("1", False): []}
            for rnd in range(6):
                for b in ("0", "1") if rnd % 2 == 0 else ("1", "0"):
                    os.environ["CONVT_DWIN_BESIDE"] = b
                    timed(args, 3, False)
                    res[(b, True)] += timed(args, 40, True)
                    res[(b, False)] += timed(args, 40, False)
            med = {key: statistics.median(v) for key, v in res.items()}
            rows.append((name, dt, med))
            print(f"{name} {dt}: gpu time same-stream {med[('0', True)]:.1f} beside {med[('1', True)]:.1f}; "
                  f"back-to-back same-stream {med[('0', False)]:.1f} beside {med[('1', False)]:.1f} us", flush=True)
            for b in ("0", "1"):
                os.environ["CONVT_DWIN_BESIDE"] = b
                trace(out_dir, f"{name}-{dt}-beside{b}", args[0])
    os.environ.pop("CONVT_DWIN_BESIDE", None)
    print("| case | dtype | GPU time, same stream | GPU time, beside | back-to-back, same stream | back-to-back, beside |")
    print("|---|---|---|---|---|---|")
    for name, dt, m in rows:
        print(f"| {name} | {dt} | {m[('0', True)]:.1f} | {m[('1', True)]:.1f} | {m[('0', False)]:.1f} | "
              f"{m[('1', False)]:.1f} |")


if __name__ == "__main__":
    main()
