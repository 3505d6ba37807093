#!/usr/bin/env python3
"""What a switch costs in the sliced design, from a run's own results.jsonl.

In the sliced design the client moves to another server every few seconds. If the switch costs
anything (cold caches of a server that sat idle, connections opened anew, the previous server's
background work — InnoDB's purge and flushing after a burst of writes — still running), it shows
in the first second of each slice. Adjacent seconds of one slice see the same host regime, so the
ratio second 1 / second 2 isolates the switch from the host's seconds-scale noise.

Prints, per workload: the mean first-second ratio over all slices with a 95 % interval, then the
same split by which contender ran the slice before (a faster predecessor leaves more purge work
behind on write workloads: the one cost that is not shared alike, since a contender never
follows itself).

usage: tools/slice-switch-cost.py RUN_DIR/results.jsonl [...]
"""
import collections
import json
import math
import statistics
import sys


def pct(mean_log):
    return 100 * (math.exp(mean_log) - 1)


def ci(values):
    if len(values) < 2:
        return float("nan")
    return 1.96 * statistics.stdev(values) / math.sqrt(len(values))


def main(paths):
    for path in paths:
        rows = [json.loads(line) for line in open(path)]
        by_w = collections.defaultdict(list)
        by_pred = collections.defaultdict(lambda: collections.defaultdict(list))
        prev = None
        for r in rows:  # results.jsonl is in execution order
            if r.get("slice") is None:
                prev = None
                continue
            key = (r["round"], r["workload"], r["threads"])
            tps = [i["tps"] for i in r["result"]["intervals"]]
            if len(tps) >= 2 and tps[0] > 0 and tps[1] > 0:
                x = math.log(tps[0] / tps[1])
                by_w[r["workload"]].append(x)
                if prev is not None and prev[0] == key:
                    by_pred[r["workload"]][prev[1]].append(x)
            prev = (key, r["contender"])
        if not by_w:
            print(f"{path}: no slices of 2 s or more")
            continue
        print(path)
        for w, xs in by_w.items():
            m = statistics.mean(xs)
            print(f"  {w:18s} slices {len(xs):5d}  first second / second: "
                  f"{pct(m):+6.2f} % [{pct(m - ci(xs)):+6.2f}, {pct(m + ci(xs)):+6.2f}]")
            for p, ys in sorted(by_pred[w].items()):
                m = statistics.mean(ys)
                print(f"      after {p:24s} {len(ys):4d}  {pct(m):+6.2f} % ± {100 * ci(ys):.2f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
