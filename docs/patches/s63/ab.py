"""Session 63: an environment variable's settings side by side. Per case and dtype:
GPU time (bench.gpu_time's method: a 0.2 ms sleep, then events around one call) and back-to-back per-call events
(bench.run's), the settings alternated in 6 rounds of 40 calls; then one profiled call a setting, its kernels placed
against the first kernel's start. Usage: python3 ab.py OUT_DIR VAR VALUE,VALUE[,..] CASE[,CASE] fp32|fp16|bf16[,..]
[INPUTS [notrace]]: INPUTS random inputs in rotation (3 unless given; bench.gpu_time takes 4, which for FSRCNN's 14.7 MB
inputs is past an H200's 50 MB L2, where 3 are not)."""
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
        torch.cuda._sleep(400000)
        kernels.conv_transpose2d(*args)
        torch.cuda.synchronize()
    path = os.path.join(out_dir, f"trace-{tag}.json")
    prof.export_chrome_trace(path)
    ks = [e for e in json.load(open(path))["traceEvents"] if e.get("cat") == "kernel" and "sleep" not in e["name"]]
    t0 = min(e["ts"] for e in ks)
    for e in sorted(ks, key=lambda e: e["ts"]):
        a = e.get("args", {})
        name = e["name"].split("(")[0].split("::")[-1][:40]
        print(f"  {tag:28s} {name:40s} start {e['ts'] - t0:7.2f} us  dur {e['dur']:7.2f} us  grid {a.get('grid')} "
              f"regs {a.get('registers per thread')}")


def main():
    out_dir, var, MODES = sys.argv[1], sys.argv[2], tuple(sys.argv[3].split(","))
    cases, dts = sys.argv[4].split(","), sys.argv[5].split(",")
    inputs = int(sys.argv[6]) if len(sys.argv) > 6 else 3
    traced = "notrace" not in sys.argv[7:]
    os.environ.setdefault("CONVT_CUDA_ALGO", "auto")
    rows = []
    for name in cases:
        n, cin, cout, k, hw, s, p, op, d, g = CASES[name]
        for dt in dts:
            dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dt]
            torch.backends.cudnn.allow_tf32 = True
            w = torch.randn(cin, cout // g, *k, device="cuda", dtype=dtype)
            xs = [torch.rand(n, cin, *hw, device="cuda", dtype=dtype) for _ in range(inputs)]
            args = [(x, w, None, s, p, op, g, d) for x in xs]
            res = {(m, sl): [] for m in MODES for sl in (True, False)}
            for rnd in range(6):
                for m in MODES if rnd % 2 == 0 else MODES[::-1]:
                    os.environ[var] = m
                    timed(args, 3, False)
                    res[(m, True)] += timed(args, 40, True)
                    res[(m, False)] += timed(args, 40, False)
            med = {key: statistics.median(v) for key, v in res.items()}
            rows.append((name, dt, med))
            print(f"{name} {dt}: gpu time " + " ".join(f"{m}:{med[(m, True)]:.2f}" for m in MODES)
                  + "; back-to-back " + " ".join(f"{m}:{med[(m, False)]:.2f}" for m in MODES), flush=True)
            for m in MODES if traced else ():
                os.environ[var] = m
                trace(out_dir, f"{name}-{dt}-{m}", args[0])
    os.environ.pop(var, None)
    print(f"| case | dtype | GPU time, {var} = {' / '.join(MODES)} (us) | back-to-back |")
    print("|---|---|---|---|")
    for name, dt, m in rows:
        print(f"| {name} | {dt} | " + " / ".join(f"{m[(x, True)]:.2f}" for x in MODES) + " | "
              + " / ".join(f"{m[(x, False)]:.2f}" for x in MODES) + " |")


if __name__ == "__main__":
    main()
