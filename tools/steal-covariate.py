#!/usr/bin/env python3
"""How much of a sliced benchmark's per-round scatter would a steal covariate remove? An estimate.

Usage: steal-covariate.py RUN_DIR [RUN_DIR ...]

For each workload of a sliced run (results.jsonl with load.steal_share per slice):
  - b: the slope of a slice's log TPS on its steal share, within cells (each contender's slices
    of one round, both centred on their cell's mean): what losing CPU to the hypervisor costs,
    estimated without any comparison between contenders;
  - per contender against the baseline, over rounds: the per-round log ratio (mean of the
    slices' log TPS, contender less baseline) and the pair's steal difference in that round.
    Printed: the ratios' sd as they are ("sd") and after subtracting b times the steal
    difference ("adjusted"; the same whether the difference is centred on its mean or not), the
    estimate as it is, and the estimate after the uncentred subtraction ("naive") with the mean
    steal difference — a contender whose servers see less steal on average loses that part of its
    advantage in the naive form, and the centred form keeps the estimate but its interval would
    not cover (docs/bench/steal/README.md).
docs/bench/steal/ holds its output over every committed sliced run.
"""

import math
import statistics as st

import runlib


def analyse(d):
    recs = runlib.records(d, lambda r: runlib.measured(r) and r.get("slice") is not None)
    if not recs:
        print(f"{d}\n  not a sliced run with recorded load")
        return
    contenders = sorted({r["contender"] for r in recs})
    base = runlib.baseline(contenders)
    print(f"{d} (against {base})")
    for (w, t), by in sorted(runlib.cells(recs).items()):
        xs, ys, log_tps, steal = [], [], {}, {}
        for k, rs in by.items():
            lg = [math.log(r["result"]["transactions"] / r["result"]["total_time_s"]) for r in rs]
            s = [r["load"]["steal_share"] for r in rs]
            xs += [x - st.mean(s) for x in s]
            ys += [y - st.mean(lg) for y in lg]
            log_tps[k], steal[k] = st.mean(lg), st.mean(s)
        sxx = sum(x * x for x in xs)
        if sxx == 0:
            continue
        b = sum(x * y for x, y in zip(xs, ys)) / sxx
        print(f"  {w} {t}t: b = {b:+.2f} (log TPS per unit of steal share)")
        for c in contenders:
            if c == base:
                continue
            pairs = [
                (log_tps[(rnd, c)] - log_tps[(rnd, base)], steal[(rnd, c)] - steal[(rnd, base)])
                for (rnd, cc) in log_tps
                if cc == c and (rnd, base) in log_tps
            ]
            if len(pairs) < 3:
                continue
            raw = [y for y, _ in pairs]
            mean_ds = st.mean(ds for _, ds in pairs)
            centred = [y - b * (ds - mean_ds) for y, ds in pairs]
            naive = [y - b * ds for y, ds in pairs]
            pct = lambda v: (math.exp(st.mean(v)) - 1) * 100  # noqa: E731
            print(
                f"    {c:<16} {len(pairs):>2} rounds  sd {st.stdev(raw) * 100:5.1f} %  "
                f"adjusted {st.stdev(centred) * 100:5.1f} %  estimate {pct(raw):+6.1f} %  "
                f"(naive {pct(naive):+6.1f} %, mean steal difference {mean_ds * 100:+.1f} points)"
            )


if __name__ == "__main__":
    runlib.main(analyse, __doc__)
