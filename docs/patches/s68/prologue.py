"""Session 68: thread 0's prologue phases from trace_ab.py's DUMP of .exp68/v65m.cu-style marks (slot 10: before the
first rows' loads; 9, where present: after the addresses' arithmetic, before the mbarriers and the slots'
zeroing; 11: after the rows' loads are issued; 12: the weights' loads arrived; 3: after the weights' barrier; 13: the
first rows arrived). Medians over blocks and traced launches, in us, split by dispatch (first block of an SM or
later). Run: python3 prologue.py DUMP.pt"""
import sys

import torch

NSM = 132
STEPS = [("start->addresses", 2, 9), ("addresses->rows issued", 9, 10), ("start->rows issued", 2, 10), ("rows' loads issue", 10, 11), ("weights' loads", 11, 12),
         ("weights' stores+barrier", 12, 3), ("first rows' wait", 3, 13), ("cell row 0 (rest)", 13, 4),
         ("start->loop", 2, 13), ("block", 2, 14)]
for key, traces in torch.load(sys.argv[1]).items():
    m = torch.cat(traces).double()
    idx, m = m[:, 0], m[:, 1:]
    ghz = ((m[:, 14] - m[:, 2]) / (m[:, 15] - m[:, 0]).clamp(min=1)).median()
    later = idx >= NSM
    out = []
    for name, a, b in STEPS:
        if not bool((m[:, a] > 0).all()) or not bool((m[:, b] > 0).all()):
            continue
        d = (m[:, b] - m[:, a]) / ghz / 1e3
        out.append(f"{name} {float(d[~later].median()):.2f}/{float(d[later].median()):.2f}")
    print(" ".join(key), f"({ghz:.2f} GHz; first/later blocks):", "; ".join(out))
