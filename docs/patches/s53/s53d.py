"""Session 53 call D: why kb71 on the window kernel reads ~55 us more by bench.run's per-call events than by
bench.gpu_time (dwnp8: ~20 us more). Timing methods side by side, and the kernels' own durations from the profiler."""
import os, statistics, torch
import torch.nn.functional as F
import kernels
from bench.problems import KERNELBENCH_CASES

n, cin, cout, k, hw, s, p, op, d, g = KERNELBENCH_CASES["kb71"]
torch.backends.cudnn.allow_tf32 = True
w = torch.randn(cin, cout // g, *k, device="cuda")
xs = [torch.rand(n, cin, *hw, device="cuda") for _ in range(4)]
call = lambda x: kernels.conv_transpose2d(x, w, None, s, p, op, g, d)
cud = lambda x: F.conv_transpose2d(x, w, None, s, p, op, g, d)

def per_call(fn, sets, sleep=False, keep=False, reps=30):
    for i in range(5): fn(sets[i % len(sets)])
    torch.cuda.synchronize(); t = []; outs = []
    for i in range(reps):
        if sleep: torch.cuda._sleep(400000)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); y = fn(sets[i % len(sets)]); b.record(); b.synchronize()
        if keep: outs.append(y)
        t.append(a.elapsed_time(b) * 1e3)
        del y
        if len(outs) > 2: outs.pop(0)
    return statistics.median(t)

def stream(fn, sets, reps=20):
    for i in range(5): fn(sets[i % len(sets)])
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for i in range(reps): fn(sets[i % len(sets)])
    b.record(); b.synchronize()
    return a.elapsed_time(b) * 1e3 / reps

def kernel_us(fn, sets, reps=10):
    from torch.profiler import profile, ProfilerActivity
    for i in range(3): fn(sets[i % len(sets)])
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(reps):
            fn(sets[i % len(sets)]); torch.cuda.synchronize()
    ev = [e for e in prof.events() if e.device_type.name == "CUDA"]
    by = {}
    for e in ev: by.setdefault(e.name[:60], []).append(e.device_time)
    return {k: (len(v), statistics.median(v)) for k, v in by.items()}

rows = []
for algo in ["dwin", "dwnp8", "cudnn"]:
    fn = cud if algo == "cudnn" else call
    if algo != "cudnn": os.environ["CONVT_CUDA_ALGO"] = algo
    r = {"algo": algo,
         "per-call 1 input": per_call(fn, xs[:1]), "per-call 4 inputs": per_call(fn, xs),
         "per-call after sleep": per_call(fn, xs, sleep=True), "per-call keep outputs": per_call(fn, xs, keep=True),
         "stream 20": stream(fn, xs)}
    rows.append(r)
    print(algo, kernel_us(fn, xs), flush=True)
keys = list(rows[0])
print("| " + " | ".join(keys) + " |"); print("|" + "---|" * len(keys))
for r in rows: print("| " + " | ".join(r[k] if k == "algo" else f"{r[k]:.1f}" for k in keys) + " |")
