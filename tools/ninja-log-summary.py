#!/usr/bin/env python3
"""Where a Ninja build's time went, from its .ninja_log: step-seconds by source area (the top
directory, or the top two under extra/, storage/, plugin/, components/), the slowest steps, and the
link of the server binary. A step's time is its wall time as Ninja measured it; with -jN, N steps run
at once, so step-seconds divided by N approximate wall time on an otherwise idle machine.

usage: ninja-log-summary.py BUILD_DIR/.ninja_log [--top N]"""
import sys
from collections import defaultdict

if len(sys.argv) < 2:
    sys.exit(__doc__)
path = sys.argv[1]
top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 15
steps = {}
with open(path) as f:
    for line in f:
        if line.startswith("#"):
            continue
        start, end, _mtime, out, _hash = line.rstrip("\n").split("\t")
        # A step rebuilt later appears again: the last entry is the one that counts.
        steps[out] = (int(start), int(end))


def area(out):
    parts = out.split("/")
    if parts[0] in ("extra", "storage", "plugin", "components") and len(parts) > 1:
        return "/".join(parts[:2])
    return parts[0]


by_area = defaultdict(lambda: [0.0, 0])
for out, (s, e) in steps.items():
    a = by_area[area(out)]
    a[0] += (e - s) / 1000
    a[1] += 1
total = sum(v[0] for v in by_area.values())
span = (max(e for _, e in steps.values()) - min(s for s, _ in steps.values())) / 1000
print(f"{len(steps)} steps, {total:.0f} step-seconds, first start to last end {span:.0f} s\n")
print("| area | steps | step-seconds | share |")
print("|---|---:|---:|---:|")
for name, (sec, n) in sorted(by_area.items(), key=lambda kv: -kv[1][0]):
    if sec / total < 0.005:
        continue
    print(f"| {name} | {n} | {sec:.0f} | {100 * sec / total:.1f} % |")
print(f"\nslowest {top} steps:\n")
print("| step | seconds |")
print("|---|---:|")
for out, (s, e) in sorted(steps.items(), key=lambda kv: kv[1][0] - kv[1][1])[:top]:
    print(f"| {out.split('CMakeFiles/')[-1]} | {(e - s) / 1000:.1f} |")
