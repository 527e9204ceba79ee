"""Sums an Nsight Compute source page (SASS, per-instruction counts) by opcode.

    ncu --section SourceCounters -k regex:convt_rows -c 1 -o rep python3 -m bench.profile_one fsrcnn-56-1-n1
    ncu -i rep.ncu-rep --page source --csv --print-source sass > src.csv
    python -m bench.ncu_opcodes src.csv
"""

import collections
import csv
import sys


def main(path: str, top: int = 24) -> None:
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("==")]
    # a "Kernel Name" line comes before the table's header
    start = next(i for i, line in enumerate(lines) if line.startswith('"Address"'))
    rows = list(csv.DictReader(lines[start:]))
    source = next(k for k in rows[0] if k.strip() == "Source")
    count = next(k for k in rows[0] if k.strip() in ("Instructions Executed", "Warp Instructions Executed"))
    by_op: collections.Counter = collections.Counter()
    for r in rows:
        text = r[source].strip()
        if not text or not r[count].replace(",", "").strip():
            continue
        words = [w for w in text.split() if not w.startswith("@")]
        if words:
            by_op[words[0].rstrip(";")] += float(r[count].replace(",", ""))
    total = sum(by_op.values())
    print(f"warp-level instructions executed: {total / 1e6:.1f} M; opcodes (M, share):")
    for op, n in by_op.most_common(top):
        print(f"  {op:<20}{n / 1e6:8.2f}  {100 * n / total:5.1f}%")


if __name__ == "__main__":
    main(sys.argv[1])
