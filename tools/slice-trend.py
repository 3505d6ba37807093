#!/usr/bin/env python3
"""Does a workload's throughput climb through its cells? From a sliced run's own results.jsonl.

For every workload: each slice's TPS over its (round, contender) cell's mean, averaged by slice
index (a steady workload gives about 1.0 everywhere; a cold start, low first slices), and how many
cells had that slice below half their mean. For each workload whose first three slices average
below 0.8 of the last three: that start/end ratio by round and by contender, and the server's CPU
seconds in its slow slices against its fast ones (a server waiting for its disk uses little CPU).

    tools/slice-trend.py docs/results/mysql-9.7-default/results.jsonl
"""

import collections
import json
import sys


def tps(e):
    r = e["result"]
    return r["transactions"] / r["total_time_s"] if r["total_time_s"] > 0 else 0.0


def main(paths):
    for path in paths:
        recs = [json.loads(line) for line in open(path) if line.strip()]
        cells = collections.defaultdict(dict)
        for e in recs:
            if e.get("slice") is None:
                continue
            key = (e["workload"], e["round"], e["contender"], e["threads"])
            cells[key][e["slice"]] = e
        if not cells:
            print(f"{path}: no sliced records")
            continue
        print(f"== {path}")
        by_w = collections.defaultdict(lambda: collections.defaultdict(list))
        for (w, *_), sl in cells.items():
            m = sum(tps(e) for e in sl.values()) / len(sl)
            if m > 0:
                for k, e in sl.items():
                    by_w[w][k].append(tps(e) / m)
        for w, d in by_w.items():
            ks = sorted(d)
            means = " ".join(f"{sum(d[k]) / len(d[k]):4.2f}" for k in ks)
            low = " ".join(str(sum(1 for x in d[k] if x < 0.5)) for k in ks)
            print(f"{w:22s} slice/cell mean: {means}   cells below 0.5: {low}")
        for w in by_w:
            ratios, cpu_slow, cpu_fast = [], [], []
            by_round = collections.defaultdict(list)
            by_contender = collections.defaultdict(list)
            for (cw, rnd, c, _), sl in cells.items():
                if cw != w or len(sl) < 6:
                    continue
                ks = sorted(sl)
                start = sum(tps(sl[k]) for k in ks[:3]) / 3
                end = sum(tps(sl[k]) for k in ks[-3:]) / 3
                if end <= 0:
                    continue
                ratios.append(start / end)
                by_round[rnd].append(start / end)
                by_contender[c].append(start / end)
                m = sum(tps(e) for e in sl.values()) / len(sl)
                for e in sl.values():
                    load = e.get("load") or {}
                    if "server_cpu_s" in load:
                        (cpu_slow if tps(e) < 0.5 * m else cpu_fast).append(load["server_cpu_s"])
            if not ratios or sum(ratios) / len(ratios) >= 0.8:
                continue
            avg = lambda v: sum(v) / len(v) if v else float("nan")
            print(f"  {w}: first 3 slices / last 3, mean {avg(ratios):.2f} over {len(ratios)} cells")
            print("    by round:     " + " ".join(f"{r}:{avg(v):.2f}" for r, v in sorted(by_round.items())))
            print("    by contender: " + " ".join(f"{c}:{avg(v):.2f}" for c, v in sorted(by_contender.items())))
            print(f"    server CPU s per slice: {avg(cpu_slow):.2f} in slices below half the cell's mean "
                  f"({len(cpu_slow)}), {avg(cpu_fast):.2f} in the rest ({len(cpu_fast)})")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
