#!/usr/bin/env python3
"""The share of a fresh profile's gain that a stale one keeps, with its interval.

Reads a pgoforge run's results.jsonl (one record per measured run or slice) and,
per workload, pairs the rounds: a round's throughput of each contender is its
transactions over its measured seconds (slices summed), and its gain over the
baseline is the log of the ratio in that round. The share is the stale
contender's mean log gain over the fresh one's; its 95 % interval resamples the
rounds (paired bootstrap, percentile). The same for capacity (transactions per
server-CPU second) where the records carry the server's CPU time.

Usage: share-of-gain.py [--json] RESULTS.jsonl BASELINE FRESH STALE [STALE ...]
"""
import json
import math
import random
import sys
from collections import defaultdict

BOOT = 20000


def rounds(path):
    tx = defaultdict(float)
    secs = defaultdict(float)
    cpu = defaultdict(float)
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            k = (d["workload"], d["threads"], d["round"], d["contender"])
            tx[k] += d["result"]["transactions"]
            secs[k] += d["result"]["total_time_s"]
            load = d.get("load") or {}
            cpu[k] += load.get("server_cpu_s") or math.nan
    return tx, secs, cpu


def share(a, b, idx):
    ma = sum(a[i] for i in idx) / len(idx)
    mb = sum(b[i] for i in idx) / len(idx)
    return ma / mb if mb != 0 else math.nan


def interval(a, b, rng):
    n = len(a)
    boot = sorted(share(a, b, [rng.randrange(n) for _ in range(n)]) for _ in range(BOOT))
    boot = [x for x in boot if not math.isnan(x)]
    return boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]


def pct(logr):
    return f"{100 * (math.exp(logr) - 1):+.1f} %"


def main():
    args = sys.argv[1:]
    as_json = "--json" in args
    path, base, fresh, *stales = [a for a in args if a != "--json"]
    tx, secs, cpu = rounds(path)
    cells = sorted({(w, t) for (w, t, _, _) in tx})
    rng = random.Random(53)
    out = []
    for w, t in cells:
        for metric, denom in (("throughput", secs), ("capacity", cpu)):
            def per_round(c):
                return {r: tx[k] / denom[k] for k in tx
                        for (w2, t2, r, c2) in [k] if (w2, t2, c2) == (w, t, c)
                        and denom[k] > 0}
            b = per_round(base)
            f = per_round(fresh)
            for stale in stales:
                s = per_round(stale)
                rs = sorted(set(b) & set(f) & set(s))
                if len(rs) < 3:
                    continue
                gf = [math.log(f[r] / b[r]) for r in rs]
                gs = [math.log(s[r] / b[r]) for r in rs]
                sh = share(gs, gf, range(len(rs)))
                lo, hi = interval(gs, gf, rng)
                out.append({
                    "workload": w, "threads": t, "metric": metric, "stale": stale,
                    "rounds": len(rs),
                    "fresh_gain": pct(sum(gf) / len(gf)),
                    "stale_gain": pct(sum(gs) / len(gs)),
                    "share_kept": round(sh, 3), "interval": [round(lo, 3), round(hi, 3)],
                })
    if as_json:
        json.dump(out, sys.stdout, indent=1)
        return
    for o in out:
        print(f"{o['workload']:<20} {o['threads']:>3} thr {o['metric']:<10} {o['stale']:<16} "
              f"fresh {o['fresh_gain']:>8}  stale {o['stale_gain']:>8}  "
              f"kept {o['share_kept']:.2f} [{o['interval'][0]:.2f}, {o['interval'][1]:.2f}] "
              f"({o['rounds']} rounds)")


if __name__ == "__main__":
    main()
