#!/usr/bin/env python3
"""How much two GCC profiles (gcda directories of the same build) agree.

    tools/gcda-overlap.py REFERENCE_DIR OTHER_DIR...

For each OTHER against REFERENCE, from `gcov-dump-12 -l` (gcov-tool's own `overlap` prints 0 % and
"inf" for GCC 12 profiles, whose summaries no longer carry the totals it divides by):
  arc overlap       sum over every arc counter of min(a/A, b/B), A and B the profiles' totals
                    (1.0: the same distribution of execution over the code; LLVM's overlap score)
  function overlap  the same over per-function totals
  hot seen          of the functions carrying 99 % of the reference's counts, the share that
                    has counts in OTHER
Results in docs/bench/train-length.md.
"""
import os
import re
import subprocess
import sys

FUNC = re.compile(r"FUNCTION ident=(\d+)")
ARCS = re.compile(r":COUNTERS arcs (\d+) counts")
VALUES = re.compile(r"^\s+\d+: ([\d ]+)$")


def load(d):
    """{(file, ident): [arc counts]}"""
    prof = {}
    for name in sorted(os.listdir(d)):
        if not name.endswith(".gcda"):
            continue
        out = subprocess.run(
            ["gcov-dump-12", "-l", os.path.join(d, name)],
            capture_output=True, text=True, check=True,
        ).stdout
        ident, in_arcs, arcs = None, False, None
        for line in out.splitlines():
            body = line.split(":", 1)[1] if ":" in line else line
            m = FUNC.search(body)
            if m:
                ident, in_arcs = m.group(1), False
                continue
            if ARCS.search(body):
                in_arcs = True
                arcs = prof.setdefault((name, ident), [])
                continue
            if "COUNTERS" in body:
                in_arcs = False
                continue
            m = VALUES.match(body)
            if m and in_arcs:
                arcs.extend(int(x) for x in m.group(1).split())
    return prof


def overlap(a, b):
    ta = sum(sum(v) for v in a.values()) or 1
    tb = sum(sum(v) for v in b.values()) or 1
    arc = 0.0
    fn = 0.0
    for k, va in a.items():
        vb = b.get(k, [])
        for i, x in enumerate(va):
            y = vb[i] if i < len(vb) else 0
            arc += min(x / ta, y / tb)
        fn += min(sum(va) / ta, sum(vb) / tb)
    hot = sorted(a, key=lambda k: -sum(a[k]))
    acc, hot_set = 0, []
    for k in hot:
        if acc >= 0.99 * ta:
            break
        acc += sum(a[k])
        hot_set.append(k)
    seen = sum(1 for k in hot_set if sum(b.get(k, [])) > 0) / max(len(hot_set), 1)
    return arc, fn, seen, len(hot_set), ta, tb


def main():
    ref = load(sys.argv[1])
    nonzero = sum(1 for v in ref.values() if sum(v) > 0)
    print(f"reference {sys.argv[1]}: {len(ref)} functions, {nonzero} with counts")
    print("| profile | functions with counts | arc overlap | function overlap | hot functions seen |")
    print("|---|---|---|---|---|")
    for d in sys.argv[2:]:
        other = load(d)
        arc, fn, seen, nhot, _, _ = overlap(ref, other)
        n = sum(1 for v in other.values() if sum(v) > 0)
        print(f"| {d} | {n} | {arc:.3f} | {fn:.3f} | {seen * 100:.1f}% of {nhot} |")


if __name__ == "__main__":
    main()
