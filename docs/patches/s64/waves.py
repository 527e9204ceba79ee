"""Session 64: trace_ab.py's dumped marks (DUMP=...), split by dispatch order: per case, dtype and variant, the median
prologue, cell rows and block time of the blocks dispatched first on their SM (linear block index < the SM count) and
of the later ones, and each SM's second block against its first.

    python3 docs/patches/s64/waves.py docs/benchmarks/s64/c-marks.pt [SMS]
"""
import collections
import sys

import torch


def main():
    dumps = torch.load(sys.argv[1])
    nsm = int(sys.argv[2]) if len(sys.argv) > 2 else 132
    for (case, dt, name), traces in dumps.items():
        for t in traces:
            idx, m = t[:, 0], t[:, 1:].double()
            t0 = m[:, 0].min()
            end = (m[:, 15] - t0) / 1e3
            ghz = float(((m[:, 14] - m[:, 2]) / (m[:, 15] - m[:, 0]).clamp(min=1)).median())
            us = lambda a, b: (m[:, b] - m[:, a]) / ghz / 1e3  # noqa: E731
            rows = torch.stack([us(3 + c, 4 + c) for c in range(7)], 1)
            blk = us(2, 14)
            later = idx >= nsm
            parts = []
            for label, mask in (("first", ~later), ("later", later)):
                r = rows[mask]
                cells = " ".join(f"{float(r[:, c][r[:, c] > 0].median()):.2f}" for c in range(7) if (r[:, c] > 0).any())
                parts.append(f"{label}: prologue {float(us(2, 3)[mask].median()):.2f}, cell rows {cells}, block "
                             f"{float(blk[mask].median()):.2f}, end max {float(end[mask].max()):.2f}")
            pairs = collections.defaultdict(list)
            for i in range(len(idx)):
                pairs[int(m[i, 1])].append(i)
            gap = torch.tensor([float(blk[max(v, key=lambda i: int(idx[i]))] - blk[min(v, key=lambda i: int(idx[i]))])
                                for v in pairs.values() if len(v) == 2])
            print(f"{case} {dt} {name}: " + "; ".join(parts)
                  + f"; an SM's second block minus its first: median {float(gap.median()):.2f} us")


if __name__ == "__main__":
    main()
