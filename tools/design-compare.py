#!/usr/bin/env python3
"""Benchmark designs compared on their own runs: the per-round scatter of the log-ratios (what a
report's intervals rest on), pooled per design and workload over every run given (A/A and A/B
alike: a real difference between the servers shifts the log-ratios, it does not scatter them),
with the wall time each design took per round. The ratio of two designs' variances gets a 95 %
bootstrap interval (rounds resampled within each run), so "1-s slices scatter less" is a claim
the data can refute.

The design is read from each run's plan.json (slice_seconds; absent = the plain design); the
baseline is the plan's first contender, every other contender is compared with it.

usage: tools/design-compare.py RUN_DIR [...]   (tools/slice-experiment.sh writes such runs)
"""
import collections
import json
import math
import os
import random
import statistics
import sys


def design_of(plan):
    s = plan.get("slice_seconds")
    return "plain" if not s else f"{s}-s slices"


def log_ratios(run):
    """{workload: [[log-ratio per round] per compared contender]} of one run."""
    plan = json.load(open(os.path.join(run, "plan.json")))
    base = plan["contenders"][0]["name"]
    tps = collections.defaultdict(lambda: collections.defaultdict(list))
    for line in open(os.path.join(run, "results.jsonl")):
        r = json.loads(line)
        res = r["result"]
        tps[(r["workload"], r["round"])][r["contender"]].append(res["transactions"] / res["total_time_s"])
    out = collections.defaultdict(lambda: collections.defaultdict(list))
    for (w, rnd), by_c in sorted(tps.items()):
        if base not in by_c:
            continue
        b = statistics.fmean(by_c[base])
        for c, v in by_c.items():
            if c != base:
                out[w][c].append(math.log(statistics.fmean(v) / b))
    return plan, {w: list(cs.values()) for w, cs in out.items()}


def pooled_var(groups):
    """Pooled within-group variance and its degrees of freedom."""
    ss = sum(sum((x - statistics.fmean(g)) ** 2 for x in g) for g in groups if len(g) > 1)
    df = sum(len(g) - 1 for g in groups if len(g) > 1)
    return (ss / df if df else float("nan")), df


def main(runs):
    data = collections.defaultdict(list)  # (design, workload) -> [groups]
    walls = collections.defaultdict(list)  # design -> [seconds per round and cell]
    for run in runs:
        plan, lr = log_ratios(run)
        d = design_of(plan)
        for w, groups in lr.items():
            data[(d, w)].extend(groups)
        wall = os.path.join(os.path.dirname(run.rstrip("/")), "wall.txt")
        name = os.path.basename(run.rstrip("/"))
        if os.path.exists(wall):
            for line in open(wall):
                if line.startswith(name + ":"):
                    cells = plan["rounds"] * len(plan["workloads"]) * len(plan["threads"])
                    walls[d].append(int(line.split()[1]) / cells)
    designs = sorted({d for d, _ in data})
    workloads = sorted({w for _, w in data})
    print(f"{'design':14s} {'workload':18s} {'groups':>6s} {'df':>4s} {'per-round sd':>13s}")
    for d in designs:
        for w in workloads:
            v, df = pooled_var(data[(d, w)])
            print(f"{d:14s} {w:18s} {len(data[(d, w)]):6d} {df:4d} {100 * math.sqrt(v):12.2f}%")
        if walls[d]:
            print(f"{d:14s} wall per round and cell: {statistics.fmean(walls[d]):.1f} s "
                  f"(runs: {', '.join(f'{x:.1f}' for x in walls[d])})")
    if len(designs) < 2:
        return
    rng = random.Random(1)
    a, b = designs[0], designs[1]
    for w in workloads + ["all"]:
        ws = workloads if w == "all" else [w]
        ga = [g for x in ws for g in data[(a, x)]]
        gb = [g for x in ws for g in data[(b, x)]]
        ratio = pooled_var(ga)[0] / pooled_var(gb)[0]
        boots = []
        for _ in range(4000):
            ra = [[rng.choice(g) for _ in g] for g in ga]
            rb = [[rng.choice(g) for _ in g] for g in gb]
            va, vb = pooled_var(ra)[0], pooled_var(rb)[0]
            if vb > 0:
                boots.append(va / vb)
        boots.sort()
        lo, hi = boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]
        print(f"variance {a} / {b}, {w}: {ratio:.2f} [bootstrap 95 %: {lo:.2f}, {hi:.2f}]")


if __name__ == "__main__":
    main(sys.argv[1:])
