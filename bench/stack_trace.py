"""Where a stack-kernel launch's time goes, block by block: the kernel built with its phase marks
(convt_stack.cu's CONVT_STACK_TRACE; bench/csrc/stack_trace.cu), one launch queued behind a sleep as
bench.gpu_time does, then per block its start against the first block's, its prologue (the first rows' loads, the
weights, the outputs' decode: up to the weights' barrier), each cell row (barrier to barrier) and its end.

    python -m bench.stack_trace [--cases fsrcnn-56-1-n1,probe-fsrcnn-n4-128] [--dtypes fp32,fp16] [--revs .,HEAD~1]

--revs: the convt_stack.cu of each git revision ("." the working tree; or a path to a copy), side by side; a summary
of GPU time (as bench.gpu_time takes it) and block span per revision comes last. STACK_TRACE_DEFINES (environment):
-D flags for an experiment's build. Needs an sm_90 GPU; builds a module a revision (a
minute or two) in the kernels' build directory.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
from pathlib import Path

import torch

import kernels  # noqa: F401  (builds and loads the main extension; CUDA_HOME resolved)
from kernels import _build
from bench.gpu_time import CASES, gpu_us

ROOT = Path(__file__).resolve().parent / "csrc"
STACK_CU = Path(_build.CSRC) / "cuda" / "convt_stack.cu"
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def load_module(rev: str):
    """The trace module of one revision's convt_stack.cu ("." the working tree's)."""
    flags = ["-O3", "-lineinfo", *_build.gencode_flags("9.0")]
    if rev == ".":
        text = STACK_CU.read_bytes()
    elif Path(rev).is_file():  # a copy of convt_stack.cu (where the tree travels without its git history)
        text = Path(rev).read_bytes()
    else:
        text = subprocess.run(["git", "show", f"{rev}:kernels/csrc/cuda/convt_stack.cu"], cwd=ROOT, check=True,
                              capture_output=True).stdout
    digest = hashlib.sha256(text).hexdigest()[:16]
    if rev != ".":
        copy = _build.build_root() / f"stack-src-{digest}" / "convt_stack_alt.cu"
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(text)
        flags += [f"-I{copy.parent}", "-DSTACK_ALT"]
    flags += [f"-I{_build.CSRC}", f"-I{_build.CSRC / 'cuda'}"]
    extra = os.environ.get("STACK_TRACE_DEFINES", "").split()  # -D flags of an experiment, in the build and its key
    flags += extra
    # the kernels' headers too: convt_stack.cu includes them, and the build's own key covers only bench/csrc's
    headers = hashlib.sha256(b"".join((_build.CSRC / h).read_bytes() for h in _build.HEADERS)).hexdigest()[:16]
    key = f"stack-trace|{digest}|{headers}|{' '.join(extra)}"
    # tma_map.cu: the tensor-map encoder the stack kernel's TMA ring calls (the main extension's, not linked here)
    sources = ("stack_trace.cu", "../../kernels/csrc/cuda/tma_map.cu")
    return _build._load("stacktrace", sources, ["-O3"], flags, [], key, root=ROOT, python_module=True)


def pct(t: torch.Tensor, q: float) -> float:
    return float(torch.quantile(t.double(), q))


def summarize(name: str, marks: torch.Tensor) -> tuple[list[str], float]:
    m = marks[marks[:, 0] > 0].double()
    t0 = m[:, 0].min()
    start_us, end_us = (m[:, 0] - t0) / 1e3, (m[:, 15] - t0) / 1e3
    # the SM clock, from each block's clock and globaltimer spans (globaltimer ticks are coarse: the median of many)
    ghz = float(((m[:, 14] - m[:, 2]) / (m[:, 15] - m[:, 0]).clamp(min=1)).median())
    cyc = lambda a, b: (m[:, b] - m[:, a]) / ghz / 1e3  # noqa: E731  us between two clock marks
    prologue = cyc(2, 3)
    rows = [cyc(3 + c, 4 + c) for c in range(10) if bool((m[:, 4 + c] > 0).any())]
    # each block's last mark before its end: the last cell row it reached (or its prologue)
    last_mark = torch.where(m[:, 3:14] > 0, m[:, 3:14], torch.zeros_like(m[:, 3:14])).max(dim=1).values
    tail = (m[:, 14] - last_mark) / ghz / 1e3
    sms = int(m[:, 1].unique().numel())
    lines = [f"## {name}: {m.shape[0]} blocks on {sms} SMs, SM clock {ghz:.2f} GHz, "
             f"span {float(end_us.max()):.1f} us (first start to last end)",
             "| part | median us | p10 | p90 | max |", "|---|---|---|---|---|"]
    def row(label, t):
        lines.append(f"| {label} | {pct(t, .5):.2f} | {pct(t, .1):.2f} | {pct(t, .9):.2f} | {float(t.max()):.2f} |")
    row("block start after the first", start_us)
    row("prologue (to the weights' barrier)", prologue)
    for c, t in enumerate(rows):
        row(f"cell row {c}", t[t > 0] if c else t)
    row("after the traced rows to the end", tail)
    row("block time (start to end)", cyc(2, 14))
    row("block end after the first start", end_us)
    return lines, float(end_us.max())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.stack_trace")
    ap.add_argument("--cases", default="fsrcnn-56-1-n1,probe-fsrcnn-n4-128")
    ap.add_argument("--dtypes", default="fp32,fp16")
    ap.add_argument("--revs", default=".")
    a = ap.parse_args(argv)
    revs = a.revs.split(",")
    mods = {rev: load_module(rev) for rev in revs}
    out, summary = [], ["| case | dtype | rev | GPU us | span us | max error / max abs ref |", "|---|---|---|---|---|---|"]
    launch = ["| blocks | dynamic shared memory | empty kernel GPU us |", "|---|---|---|"]
    for name in filter(None, a.cases.split(",")):  # --cases "": build the modules only
        n, cin, cout, k, hw, s, p, op_, d, g = CASES[name]
        for dn in a.dtypes.split(","):
            dt = DTYPES[dn]
            xs = [torch.randn(n, cin, *hw, device="cuda", dtype=dt) for _ in range(4)]
            w = torch.randn(cin, cout // g, *k, device="cuda", dtype=dt)
            args = (list(s), list(p), list(op_), g, list(d))
            ref = torch.nn.functional.conv_transpose2d(xs[0].double(), w.double(), None, s, p, op_, g, d)
            for rev, mod in mods.items():
                us = gpu_us(mod.run, [(x, w, *args) for x in xs], reps=30)
                mod.clear_marks()
                torch.cuda._sleep(400000)
                y = mod.run(xs[0], w, *args)
                marks = mod.marks().cpu()
                err = float((y.double() - ref).abs().max() / ref.abs().max())
                lines, span = summarize(f"{name} {dn} rev {rev}: GPU time {us:.1f} us", marks)
                out += lines + [""]
                summary.append(f"| {name} | {dn} | {rev} | {us:.1f} | {span:.1f} | {err:.1e} |")
                blocks = int((marks[:, 0] > 0).sum())
                for smem in (0, 100 * 1024):  # none, and about the stack kernel's (two blocks an SM)
                    row = f"| {blocks} | {smem} |"
                    if not any(l.startswith(row) for l in launch):
                        launch.append(f"{row} {gpu_us(mod.empty, [(blocks, 256, smem)], reps=30):.1f} |")
    print("\n".join(out + summary + ["", "Launch and drain alone (an empty kernel, same method):"] + launch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
