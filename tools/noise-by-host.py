#!/usr/bin/env python3
"""Whose noise is it: the server's or the host's? One line per benchmark run and workload.

Usage: noise-by-host.py RUN_DIR [RUN_DIR ...]

Each RUN_DIR holds a run's results.jsonl and environment.json (a committed result under
docs/results/ or docs/bench/). Printed per run: the host (CPU model, kernel string, fingerprint
when recorded), the server version and the design (plain or sliced); per workload: the median
coefficient of variation of per-second TPS inside one measured run (the run's 1-second intervals
after the first; sliced: the intervals of all of one contender's slices in one round),
the median coefficient of variation over rounds of server CPU per transaction, and the median over
contenders of the per-round sd of log TPS ratios against the baseline (the scatter a paired
comparison has to beat). docs/bench/mysql.md ("Why the MySQL benchmark was noisy") quotes it.
"""

import json
import math
import os
import statistics as st
from collections import defaultdict

import runlib
from runlib import cv


def host(run_dir):
    try:
        env = json.load(open(os.path.join(run_dir, "environment.json")))
    except OSError:
        return "host not recorded"
    fp = (env.get("host") or {}).get("fingerprint", "no fingerprint")
    return f"{env.get('cpu', '?')}, kernel {env.get('kernel', '?')}, {fp}"


def med(xs):
    xs = [x for x in xs if x is not None]
    return st.median(xs) if xs else float("nan")


def analyse(run_dir):
    recs = runlib.records(run_dir)
    sliced = any("slice" in r for r in recs)
    version = next((r["result"]["server"]["version"] for r in recs if "server" in r["result"]), "?")
    print(f"{run_dir}\n  {host(run_dir)}; server {version}; {'sliced' if sliced else 'plain'} design")
    for (w, t), by in sorted(runlib.cells(recs).items()):
        per_second, cpu_per_trx = [], defaultdict(list)
        tps = defaultdict(dict)  # contender -> round -> TPS
        for (rnd, c), rs in by.items():
            rs.sort(key=lambda r: r.get("slice", 0))
            trx = sum(r["result"]["transactions"] for r in rs)
            secs = sum(r["result"]["total_time_s"] for r in rs)
            if trx == 0 or secs == 0:
                continue
            tps[c][rnd] = trx / secs
            cpu = sum(r.get("load", {}).get("server_cpu_s", 0) for r in rs)
            if cpu > 0:
                cpu_per_trx[c].append(cpu / trx)
            # Every slice's 1-second intervals together (a slice's first second is dropped when
            # it has more, as a plain run's is: it includes the connections' set-up).
            seconds = []
            for r in rs:
                iv = r["result"]["intervals"]
                seconds += [i["tps"] for i in (iv[1:] if len(iv) > 2 else iv)]
            per_second.append(cv(seconds))
        base = "baseline" if "baseline" in tps else ("a" if "a" in tps else sorted(tps)[0])
        sds = []
        for c, rounds in tps.items():
            if c == base:
                continue
            lr = [math.log(rounds[i] / tps[base][i]) for i in rounds if i in tps[base]]
            if len(lr) >= 3:
                sds.append(st.stdev(lr))
        cpu_cv = med([cv(v) for v in cpu_per_trx.values()])
        print(
            f"  {w:<22} {t:>2}t  per-second CV {med(per_second) * 100:5.1f} %   "
            f"CPU/trx CV over rounds {cpu_cv * 100:5.1f} %   "
            f"per-round sd of log-ratios {med(sds) * 100:5.1f} % ({len(sds)} contenders)"
        )


if __name__ == "__main__":
    runlib.main(analyse, __doc__)
