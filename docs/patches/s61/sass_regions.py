"""Session 61: where the edge kernel's instructions and stall samples go, from ncu's source page of one kernel
(`ncu -i REP --page source --csv --print-source sass > F.csv`). Regions are SASS line ranges read off the listing:
python3 sass_regions.py F.csv WARPS [name:first:last ...]"""
import collections
import csv
import sys

rows = list(csv.reader(open(sys.argv[1])))
hdr, data, warps = rows[1], rows[2:], int(sys.argv[2])
src, samples, execd = hdr.index("Source"), hdr.index("Warp Stall Sampling (All Samples)"), hdr.index("Instructions Executed")
stalls = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]


def opcode(r):
    words = r[src].split()
    return (words[1] if words[0].startswith("@") else words[0]).split(".")[0]


total, sampled = sum(int(r[execd]) for r in data), sum(int(r[samples]) for r in data)
print(f"{total / warps:.0f} instructions a warp, {sampled} stall samples")
ops, op_samples = collections.Counter(), collections.Counter()
for r in data:
    ops[opcode(r)] += int(r[execd])
    op_samples[opcode(r)] += int(r[samples])
for o, c in ops.most_common(10):
    print(f"{o:8s} {c / total:6.1%} of instructions, {op_samples[o] / sampled:6.1%} of samples")
for spec in sys.argv[3:]:
    name, lo, hi = spec.split(":")
    part = data[int(lo):int(hi)]
    why = collections.Counter()
    for r in part:
        for i in stalls:
            if r[i] not in ("0", "", "-"):
                why[hdr[i][6:]] += int(r[i])
    n = sum(int(r[samples]) for r in part)
    print(f"{name}: {sum(int(r[execd]) for r in part) / warps:.0f} a warp, {n / sampled:.1%} of samples, "
          f"{why.most_common(5)}")
