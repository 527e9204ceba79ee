"""Session 64: variants of the stack kernel (the tree's convt_stack.cu under -D switches), side by side, without the
main extension's build. Each variant is bench/csrc/stack_trace.cu built with its defines (in parallel, one process
each); then per case and dtype: GPU time (bench.gpu_time's method: a 0.2 ms sleep, then events around one call),
rounds alternating the variants' order, INPUTS random inputs in rotation (5: past an H200's L2 for FSRCNN), the error
against float64, and one traced launch a variant (bench.stack_trace's marks: block phases, span, ends).

    python3 docs/patches/s64/trace_ab.py OUT "name:-DX -DY;name2:;name3:@path/to/convt_stack.cu" CASE[,CASE] fp32[,fp16]
        [INPUTS [ROUNDS]]
"""
import concurrent.futures
import os
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[3]
CASES = {  # bench/gpu_time.py's and bench/problems.py's shapes: n, cin, cout, k, hw, stride, pad, out_pad, dil, groups
    "fsrcnn-56-1-n1": (1, 56, 1, (9, 9), (256, 256), (3, 3), (4, 4), (2, 2), (1, 1), 1),
    "probe-fsrcnn-n4-128": (4, 56, 1, (9, 9), (128, 128), (3, 3), (4, 4), (2, 2), (1, 1), 1),
    "probe-dcgan-64-3-n1": (1, 64, 3, (4, 4), (32, 32), (2, 2), (1, 1), (0, 0), (1, 1), 1),
    "probe-128-4-k6s2-g2-n2": (2, 128, 4, (6, 6), (48, 48), (2, 2), (2, 2), (0, 0), (1, 1), 2),
    "dcgan-64-3-n64": (64, 64, 3, (4, 4), (32, 32), (2, 2), (1, 1), (0, 0), (1, 1), 1),
    # beside the suite's shapes: other ring (TF32, rows >= 72 wide) cases
    "probe-fsrcnn-n2-192": (2, 56, 1, (9, 9), (192, 192), (3, 3), (4, 4), (2, 2), (1, 1), 1),
    "probe-dcgan-64-3-128": (1, 64, 3, (4, 4), (128, 128), (2, 2), (1, 1), (0, 0), (1, 1), 1),
}
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def build(name: str, defines: str):
    from torch.utils import cpp_extension

    cpp_extension.CUDA_HOME = os.environ["CUDA_HOME"]
    d = Path(os.environ.get("CONVT_BUILD_DIR", "/tmp/convt-build")) / f"s64-{name}"
    d.mkdir(parents=True, exist_ok=True)
    csrc = ROOT / "kernels" / "csrc"
    flags = ["-O3", "-lineinfo", "-gencode=arch=compute_90a,code=sm_90a"]
    if defines.startswith("@"):  # another copy of convt_stack.cu (stack_trace.cu's STACK_ALT)
        (d / "alt").mkdir(exist_ok=True)
        alt, text = d / "alt" / "convt_stack_alt.cu", (ROOT / defines[1:]).read_bytes()
        if not alt.exists() or alt.read_bytes() != text:  # unchanged, so that the load after the build rebuilds nothing
            alt.write_bytes(text)
        flags += [f"-I{d / 'alt'}", "-DSTACK_ALT"]
        defines = ""
    flags += [f"-I{csrc}", f"-I{csrc / 'cuda'}", *defines.split()]
    return cpp_extension.load(name=f"s64_{name}", sources=[str(ROOT / "bench/csrc/stack_trace.cu"),
                                                            str(csrc / "cuda/tma_map.cu")],
                              extra_cflags=["-O3"], extra_cuda_cflags=flags, build_directory=str(d),
                              is_python_module=True, verbose=False)


def gpu_times(fn, args, reps):
    # bench.gpu_time.gpu_us's method, every sample kept; importing bench.gpu_time would build the main extension
    ev = []
    for i in range(reps):
        torch.cuda._sleep(400000)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(*args[i % len(args)])
        e.record()
        ev.append((s, e))
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in ev]


def phases(m: torch.Tensor) -> str:
    nsm = torch.cuda.get_device_properties(0).multi_processor_count
    wave2 = (m[:, 0] > 0).nonzero().flatten() >= nsm  # dispatched after the first block of every SM
    m = m[m[:, 0] > 0].double()
    t0 = m[:, 0].min()
    end = (m[:, 15] - t0) / 1e3
    ghz = float(((m[:, 14] - m[:, 2]) / (m[:, 15] - m[:, 0]).clamp(min=1)).median())
    us = lambda a, b: (m[:, b] - m[:, a]) / ghz / 1e3  # noqa: E731
    rows = [us(3 + c, 4 + c) for c in range(10) if bool((m[:, 4 + c] > 0).any())]
    rows = [float(r[r > 0].median()) for r in rows]
    q = lambda t, p: float(torch.quantile(t, p))  # noqa: E731
    return (f"blocks {m.shape[0]}, prologue {float(us(2, 3).median()):.2f}, cell rows "
            + " ".join(f"{r:.2f}" for r in rows) + f", block {float(us(2, 14).median()):.2f}; ends p10/p50/p90/max "
            f"{q(end, .1):.2f}/{q(end, .5):.2f}/{q(end, .9):.2f}/{float(end.max()):.2f}; block time, first / later "
            f"blocks of an SM {float(us(2, 14)[~wave2].median()):.2f} / {float(us(2, 14)[wave2].median()):.2f}")


def main():
    if sys.argv[1] == "--build":
        build(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
        return
    out, spec, cases, dts = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4].split(",")
    inputs = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 8
    variants = [(v.split(":", 1)[0], v.split(":", 1)[1] if ":" in v else "") for v in spec.split(";") if v]
    import subprocess

    with concurrent.futures.ThreadPoolExecutor(len(variants)) as ex:
        procs = list(ex.map(lambda v: subprocess.run([sys.executable, __file__, "--build", v[0], v[1]],
                                                     capture_output=True, text=True), variants))
    for (name, _), p in zip(variants, procs):
        if p.returncode:
            print(f"build {name} failed:\n{p.stderr[-3000:]}")
            sys.exit(1)
    mods = {name: build(name, d) for name, d in variants}
    summary, dumps = [], {}
    for case in cases:
        n, cin, cout, k, hw, s, p, op, d, g = CASES[case]
        for dt in dts:
            dtype = DTYPES[dt]
            w = torch.randn(cin, cout // g, *k, device="cuda", dtype=dtype)
            xs = [torch.randn(n, cin, *hw, device="cuda", dtype=dtype) for _ in range(inputs)]
            args = [(x, w, list(s), list(p), list(op), g, list(d)) for x in xs]
            ref = torch.nn.functional.conv_transpose2d(xs[0].double(), w.double(), None, s, p, op, g, d)
            res = {name: [] for name, _ in variants}
            for r in range(rounds):
                order = variants if r % 2 == 0 else variants[::-1]
                for name, _ in order:
                    gpu_times(mods[name].run, args, 3)
                    res[name] += gpu_times(mods[name].run, args, 40)
            for name, _ in variants:
                mod = mods[name]
                y = mod.run(*args[0])
                err = float((y.double() - ref).abs().max() / ref.abs().max())
                traces = []
                for i in range(3):
                    mod.clear_marks()
                    torch.cuda._sleep(400000)
                    mod.run(*args[(1 + i) % len(args)])
                    traces.append(mod.marks().cpu())
                med = statistics.median(res[name])
                q1, q3 = statistics.quantiles(res[name], n=4)[0], statistics.quantiles(res[name], n=4)[2]
                line = (f"{case} {dt} {name}: GPU {med:.2f} us (IQR {q1:.2f}-{q3:.2f}), err {err:.1e}; "
                        + phases(traces[0]))
                print(line, flush=True)
                summary.append((case, dt, name, med, err))
                # the blocks that ran, each with its linear block index first
                dumps[(case, dt, name)] = [torch.cat([(m[:, 0] > 0).nonzero(), m[m[:, 0] > 0]], 1) for m in traces]
    if os.environ.get("DUMP"):  # every traced launch's marks, for a look at single blocks
        torch.save(dumps, os.path.join(out, os.environ["DUMP"]))
    print("\n| case | dtype | " + " | ".join(v for v, _ in variants) + " |")
    print("|---|---|" + "---|" * len(variants))
    for case in cases:
        for dt in dts:
            row = {name: (med, err) for c, t, name, med, err in summary if c == case and t == dt}
            print(f"| {case} | {dt} | " + " | ".join(f"{row[v][0]:.2f} ({row[v][1]:.0e})" for v, _ in variants) + " |")


if __name__ == "__main__":
    main()
