#!/usr/bin/env python3
"""How alike two BOLT profiles (.fdata) are: the measure for choosing BOLT's profiling length.

Usage: fdata-overlap.py REFERENCE.fdata OTHER.fdata [...]

For each OTHER against REFERENCE prints
- edge overlap: sum over branch edges of min(p, q), where p and q are each profile's edge counts
  normalized to sum 1 (1.0 = identical distributions; the same statistic as llvm-profdata overlap
  and gcov-tool overlap use for their formats),
- function overlap: the same over the counts summed per source function (what function
  reordering sees),
- hot coverage: the share of the reference's hottest functions that carry 99 % of its counts which
  OTHER also saw at all.
The fdata line format: `1 FROM_SYM FROM_OFF 1 TO_SYM TO_OFF MISPREDS COUNT` (branches) or
`0 ...` entries; only lines with 8 fields are used.
"""

import sys
from collections import defaultdict


def load(path):
    edges = defaultdict(int)
    funcs = defaultdict(int)
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) != 8:
                continue
            count = int(p[7])
            edges[(p[1], p[2], p[4], p[5])] += count
            funcs[p[1]] += count
    return edges, funcs


def overlap(a, b):
    sa, sb = sum(a.values()), sum(b.values())
    if sa == 0 or sb == 0:
        return 0.0
    return sum(min(a[k] / sa, b.get(k, 0) / sb) for k in a)


def hot(funcs, share=0.99):
    total = sum(funcs.values())
    out, acc = [], 0
    for name, c in sorted(funcs.items(), key=lambda x: -x[1]):
        if acc >= share * total:
            break
        out.append(name)
        acc += c
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ref_e, ref_f = load(sys.argv[1])
    ref_hot = hot(ref_f)
    print(f"reference {sys.argv[1]}: {len(ref_e)} edges, {len(ref_f)} functions, "
          f"{len(ref_hot)} carry 99% of the counts")
    print("| profile | edges | edge overlap | function overlap | hot functions seen |")
    print("|---|---|---|---|---|")
    for other in sys.argv[2:]:
        e, fn = load(other)
        seen = sum(1 for n in ref_hot if fn.get(n, 0) > 0) / max(len(ref_hot), 1)
        print(f"| {other} | {len(e)} | {overlap(ref_e, e):.3f} | {overlap(ref_f, fn):.3f} "
              f"| {seen * 100:.1f}% |")


if __name__ == "__main__":
    main()
