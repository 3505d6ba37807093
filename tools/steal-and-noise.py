#!/usr/bin/env python3
"""Does the hypervisor's CPU steal explain a benchmark's noise? One line per run and workload.

Usage: steal-and-noise.py RUN_DIR [RUN_DIR ...]

Each RUN_DIR holds a run's results.jsonl (a committed result under docs/results/ or docs/bench/).
Every measured run (or slice, in the sliced design) records the share of the machine's CPU time
the hypervisor stole while it ran (load.steal_share, from /proc/stat). Printed per run: the mean
steal over its measured runs and the share of them that lost 10 % or more; per workload:
  - per-second CV: the median coefficient of variation of the 1-second TPS inside a contender's
    run or a round's slices (as noise-by-host.py);
  - r(slice): the correlation, over every run or slice, between its steal and its log TPS less
    the mean log TPS of the same contender in the same round and workload — does a run that lost
    more CPU to the hypervisor measure less than its neighbours?;
  - R2: the share of that within-cell variance a straight line in steal explains;
  - r(round): over rounds and contender pairs (each against the run's baseline), the correlation
    between the per-round log ratio and the pair's difference in mean steal — does steal that
    falls unevenly on a pair explain the scatter the paired comparison has to beat?
docs/bench/steal/ holds its output over every committed run.
"""

import math
import statistics as st

import runlib
from runlib import cv


def corr(xs, ys):
    if len(xs) < 3 or st.pstdev(xs) == 0 or st.pstdev(ys) == 0:
        return None
    mx, my = st.mean(xs), st.mean(ys)
    cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / len(xs)
    return cov / (st.pstdev(xs) * st.pstdev(ys))


def fmt(r):
    return "   —  " if r is None else f"{r:+.2f} "


def analyse(run_dir):
    recs = runlib.records(run_dir, runlib.measured)
    if not recs:
        print(f"{run_dir}\n  no run recorded its load")
        return
    steal = [r["load"]["steal_share"] for r in recs]
    high = sum(s >= 0.10 for s in steal) / len(steal)
    print(
        f"{run_dir}\n  steal: mean {st.mean(steal) * 100:.1f} % over {len(steal)} measured runs, "
        f"{high * 100:.0f} % of them 10 % or more, the worst {max(steal) * 100:.0f} %"
    )
    base = runlib.baseline({r["contender"] for r in recs})
    for (w, t), by in sorted(runlib.cells(recs).items()):
        dev, st_of, per_second = [], [], []
        mean_steal, log_tps = {}, {}
        for (rnd, c), rs in by.items():
            logs = [math.log(r["result"]["transactions"] / r["result"]["total_time_s"]) for r in rs]
            m = st.mean(logs)
            for r, lg in zip(rs, logs):
                dev.append(lg - m)
                st_of.append(r["load"]["steal_share"])
            trx = sum(r["result"]["transactions"] for r in rs)
            secs = sum(r["result"]["total_time_s"] for r in rs)
            log_tps[(rnd, c)] = math.log(trx / secs)
            mean_steal[(rnd, c)] = st.mean(r["load"]["steal_share"] for r in rs)
            seconds = []
            for r in rs:
                iv = r["result"].get("intervals") or []
                seconds += [i["tps"] for i in (iv[1:] if len(iv) > 2 else iv)]
            per_second.append(cv(seconds))
        r_slice = corr(st_of, dev)  # None in the plain design: one run per cell, no spread
        # (contender, log ratio, steal difference) per round against the baseline.
        pairs = [
            (c, log_tps[(rnd, c)] - log_tps[(rnd, base)], mean_steal[(rnd, c)] - mean_steal[(rnd, base)])
            for (rnd, c) in log_tps
            if c != base and (rnd, base) in log_tps
        ]
        # Each pair's own mean ratio removed: what is left is the scatter around it.
        pair_mean = {c: st.mean(y for cc, y, _ in pairs if cc == c) for c, _, _ in pairs}
        ratios = [y for _, y, _ in pairs]
        dsteal = [ds for _, _, ds in pairs]
        centred = [y - pair_mean[c] for c, y, _ in pairs]
        r_round = corr(dsteal, centred)
        ps = [x for x in per_second if x is not None]
        print(
            f"  {w:<22} {t:>2}t  per-second CV {st.median(ps) * 100 if ps else float('nan'):5.1f} %  "
            f"r(slice) {fmt(r_slice)} R2 {(r_slice or 0) ** 2:4.2f}  "
            f"r(round) {fmt(r_round)} ({len(ratios)} pair-rounds against {base})"
        )


if __name__ == "__main__":
    runlib.main(analyse, __doc__)
