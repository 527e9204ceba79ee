"""Sums an Nsight Compute SASS source page by address window: warp instructions executed, stall samples, the
opcodes that matter and the top stall reasons of each window (which code region a kernel's time sits in).

    ncu --section SourceCounters --section WarpStateStats -k regex:convt -c 1 -o rep python3 -m bench.profile_one kb57
    ncu -i rep.ncu-rep --page source --csv --print-source sass > src.csv
    python -m bench.ncu_regions src.csv [window bytes, default 0x280]
"""

import collections
import csv
import sys

KEEP = ("HGMMA", "WARPGROUP", "SYNCS", "LDG", "LDGSTS", "STG", "LDS", "STS", "BAR", "DEPBAR", "SHFL", "MEMBAR",
        "FENCE", "HMMA", "LDSM", "STSM", "UBLKCP")


def number(s: str) -> float:
    s = (s or "").replace(",", "").strip()
    try:
        return float(s)
    except ValueError:
        return 0.0


def main(path: str, window: int = 0x280) -> None:
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("==")]
    start = next(i for i, line in enumerate(lines) if line.startswith('"Address"'))
    rows = list(csv.DictReader(lines[start:]))
    keys = list(rows[0])
    source = next(k for k in keys if k.strip() == "Source")
    count = next(k for k in keys if k.strip() in ("Instructions Executed", "Warp Instructions Executed"))
    samples = next(k for k in keys if k.strip().startswith("Warp Stall Sampling (All"))
    reasons = [k for k in keys if k.strip().startswith("stall_") or k.strip().startswith("smsp__pcsamp")]
    regions: dict = collections.defaultdict(lambda: [0.0, 0.0, collections.Counter(), collections.Counter()])
    tot_i = tot_s = 0.0
    for r in rows:
        addr = int(r["Address"], 16)
        reg = regions[addr // window * window]
        n, s = number(r[count]), number(r[samples])
        reg[0] += n
        reg[1] += s
        tot_i += n
        tot_s += s
        op = next((w for w in r[source].split() if not w.startswith("@")), "").split(".")[0]
        if op in KEEP:
            reg[2][op] += 1
        for k in reasons:
            v = number(r[k])
            if v:
                reg[3][k.strip().replace("stall_", "")] += v
    print(f"samples {tot_s:.0f}, warp instructions {tot_i / 1e6:.1f} M")
    for a in sorted(regions):
        i, s, ops, why = regions[a]
        if s < 0.005 * tot_s and i < 0.005 * tot_i:
            continue
        top = " ".join(f"{k}:{100 * v / tot_s:.1f}" for k, v in why.most_common(3))
        print(f"{a:6x} {i / 1e6:8.2f}M {100 * i / tot_i:5.1f}%i {100 * s / tot_s:5.1f}%s {dict(ops)} [{top}]")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2], 0) if len(sys.argv) > 2 else 0x280)
