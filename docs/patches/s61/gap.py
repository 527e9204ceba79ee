"""Session 61: why bench.run's per-call events run kb71 ~13% over its GPU time (kernel-notes: "not explained yet").

One layer, ours and cuDNN, four ways of timing the same calls, with the SM clock and power sampled by nvidia-smi
through each (the hypothesis: back-to-back calls hold the card at its power limit and it clocks down; gpu_time's
0.2 ms sleep before each call lets it recover). Usage: python3 gap.py CASE fp32|fp16 [REPS [alternate]]
(call B: 400 repetitions in one order; call C: 2000 each, sleep and back-to-back alternated, with the clock-event
reasons nvidia-smi gives, so that the phases' order and the card's warming cannot explain the difference)
"""
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import kernels
from bench.gpu_time import CASES


def events(fn, args, reps, sleep=False, sync=False):
    out = []
    for _ in range(reps):
        if sync:
            torch.cuda.synchronize()
        if sleep:
            torch.cuda._sleep(400000)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(*args)
        e.record()
        out.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in out)


def pipelined(fn, args, reps):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        fn(*args)
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) * 1e3 / reps


def main():
    case, mode = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 400
    alternate = len(sys.argv) > 4
    n, cin, cout, k, hw, s, p, op, d, g = CASES[case]
    dtype = torch.float32 if mode == "fp32" else torch.float16
    torch.backends.cudnn.allow_tf32 = True
    w = torch.randn(cin, cout // g, *k, device="cuda").to(dtype)
    x = torch.rand(n, cin, *hw, device="cuda").to(dtype)
    args = (x, w, None, s, p, op, g, d)
    log = open("/tmp/smi.csv", "w")
    fields = "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu"
    if alternate:  # the newer name first; older drivers call it clocks_throttle_reasons
        for name in ("clocks_event_reasons.active", "clocks_throttle_reasons.active"):
            if subprocess.run(["nvidia-smi", f"--query-gpu={name}", "--format=csv"], capture_output=True).returncode == 0:
                fields += "," + name
                break
    smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={fields}",
                            "--format=csv,noheader,nounits", "-lms", "50"], stdout=log)
    time.sleep(1.0)
    marks, rows = [], []
    for name, fn in (("ours", kernels.conv_transpose2d), ("cudnn", F.conv_transpose2d)):
        for _ in range(5):
            fn(*args)
        torch.cuda.synchronize()
        b2b, slept = (lambda: events(fn, args, reps)), (lambda: events(fn, args, reps, sleep=True))
        phases = ((("sleep 0.2 ms first", slept), ("back-to-back events", b2b)) * 3 if alternate else
                  (("back-to-back events", b2b), ("sleep 0.2 ms first", slept),
                   ("synchronize first", lambda: events(fn, args, reps, sync=True)),
                   (f"{reps} pipelined / {reps}", lambda: pipelined(fn, args, reps)), ("back-to-back again", b2b)))
        for how, run in phases:
            t0 = time.time()
            us = run()
            marks.append((name, how, t0, time.time()))
            rows.append((name, how, us))
    time.sleep(0.3)
    smi.terminate()
    smi.wait()
    samples = []
    for line in open("/tmp/smi.csv"):
        parts = [q.strip() for q in line.split(",")]
        try:
            ts = time.mktime(time.strptime(parts[0].split(".")[0], "%Y/%m/%d %H:%M:%S")) + float("0." + parts[0].split(".")[1])
            samples.append((ts, float(parts[1]), float(parts[2]), float(parts[3]), float(parts[4]),
                            parts[5] if len(parts) > 5 else ""))
        except (ValueError, IndexError):
            continue
    print(f"| {case} {mode} | timing | us | SM MHz (median of samples) | power W | temp C | samples | clock reasons |")
    print("|---|---|---|---|---|---|---|---|")
    for (name, how, us), (_, _, t0, t1) in zip(rows, marks):
        inside = [q for q in samples if t0 <= q[0] <= t1]
        med = (lambda i: statistics.median(q[i] for q in inside) if inside else float("nan"))
        reasons = " ".join(sorted({q[5] for q in inside}))
        print(f"| {name} | {how} | {us:.1f} | {med(1):.0f} | {med(3):.0f} | {med(4):.0f} | {len(inside)} | {reasons} |")


if __name__ == "__main__":
    main()
