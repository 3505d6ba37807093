#!/usr/bin/env python3
"""The structure of a sliced run's noise, from its own results.jsonl: where the scatter comes from,
and what a different split of the same benchmarking time would buy.

For every workload of every run given:

1. Per-second noise: each second's log TPS less its contender's mean in that round and workload
   (so the servers' real differences drop out), its standard deviation, and the correlation of
   two consecutive seconds — split into pairs inside one slice (same server) and pairs across a
   slice boundary (the next server). The host's slowdowns hit whichever server runs: where the
   across-boundary correlation is as high as the within-slice one, the noise belongs to the host,
   and only measurements close in time cancel it.
2. Variance components, pooled over every pair of contenders: the scatter of the per-round
   log-ratios (what the report's intervals rest on) against what the slices' own scatter inside
   a round predicts for it (slice-pair sd / sqrt(slices)). Where the two agree, the rounds add no
   noise of their own (server starts, dataset copies): more seconds per round then buy as much
   as more rounds, without the rounds' overhead.
3. A 1-second slice emulated from the recorded seconds: the two seconds either side of a slice
   boundary are two servers measured 1 s apart — their log-ratio's variance, per second measured,
   against the 2-second slices' (a ratio above 1: shorter slices would need that much less time
   for the same interval). An estimate, not a measurement: the emulated pairs all straddle a
   switch, whose cost on write workloads (tools/slice-switch-cost.py) it does not remove.

usage: tools/slice-noise.py RUN_DIR/results.jsonl [...]
"""
import collections
import itertools
import json
import math
import statistics
import sys


def corr(pairs):
    if len(pairs) < 3:
        return float("nan")
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    if va == 0 or vb == 0:
        return float("nan")
    return sum((x - ma) * (y - mb) for x, y in pairs) / math.sqrt(va * vb)


def load(path):
    """(workload, round) -> slices in execution order: (slice, position, contender, [tps/s])."""
    cells = collections.defaultdict(list)
    for line in open(path):
        r = json.loads(line)
        if r.get("slice") is None:
            continue
        secs = [iv["tps"] for iv in r["result"]["intervals"]]
        cells[(r["workload"], r["round"])].append(
            (r["slice"], r["position"], r["contender"], secs)
        )
    for recs in cells.values():
        recs.sort(key=lambda x: (x[0], x[1]))
    return cells


def per_second(cells, workload):
    """Residual log TPS per second in time order, each as (residual, contender, index in slice)."""
    out = []
    for (wl, _), recs in sorted(cells.items()):
        if wl != workload:
            continue
        logs = collections.defaultdict(list)
        for _, _, c, secs in recs:
            logs[c] += [math.log(x) for x in secs if x > 0]
        mean = {c: statistics.fmean(v) for c, v in logs.items()}
        series = []
        for _, _, c, secs in recs:
            series += [(math.log(x) - mean[c], c, i) for i, x in enumerate(secs) if x > 0]
        out.append(series)
    return out


def components(cells, workload):
    """Pooled over contender pairs: per-round variance, and the within-round slice prediction."""
    rounds = sorted({r for (w, r) in cells if w == workload})
    slices = collections.defaultdict(dict)  # (round, contender) -> {slice: tps}
    seconds = None
    for (w, r), recs in cells.items():
        if w != workload:
            continue
        for s, _, c, secs in recs:
            if secs:
                slices[(r, c)][s] = sum(secs) / len(secs)
                seconds = len(secs)
    contenders = sorted({c for (_, c) in slices})
    per_round, predicted = [], []
    for a, b in itertools.combinations(contenders, 2):
        ratios, within, k = [], [], 0
        for r in rounds:
            A, B = slices.get((r, a)), slices.get((r, b))
            if not A or not B:
                continue
            common = sorted(set(A) & set(B))
            k = len(common)
            if k < 2:
                continue
            d = [math.log(A[s] / B[s]) for s in common]
            ratios.append(math.log(sum(A[s] for s in common) / sum(B[s] for s in common)))
            within.append(statistics.variance(d))
        if len(ratios) >= 3:
            per_round.append(statistics.variance(ratios))
            predicted.append(statistics.fmean(within) / k)
    if not per_round:
        return None
    return (
        math.sqrt(statistics.fmean(per_round)),
        math.sqrt(statistics.fmean(predicted)),
        len(per_round),
        seconds,
    )


def main(paths):
    for path in paths:
        cells = load(path)
        print(path)
        for wl in sorted({w for (w, _) in cells}):
            runs = per_second(cells, wl)
            resid = [z for series in runs for z, _, _ in series]
            within, across, emul = [], [], []
            for series in runs:
                for (z0, c0, i0), (z1, c1, i1) in zip(series, series[1:]):
                    if c0 == c1 and i1 == i0 + 1:
                        within.append((z0, z1))
                    elif c0 != c1:
                        across.append((z0, z1))
                        emul.append(z0 - z1)
            comp = components(cells, wl)
            line = (
                f"  {wl:18} per-second sd {100 * statistics.pstdev(resid):5.1f} %"
                f"  lag-1 r: within a slice {corr(within):+.2f}, across a switch {corr(across):+.2f}"
            )
            print(line)
            if comp:
                sd_round, sd_pred, pairs, secs = comp
                print(
                    f"  {'':18} per-round sd {100 * sd_round:5.2f} % (pooled over {pairs} pairs);"
                    f" the slices' own scatter predicts {100 * sd_pred:5.2f} %"
                )
                # Variance of a pair's log-ratio per second measured: the recorded slices'
                # (slice-pair variance x seconds per slice) against 1-s slices (the seconds
                # either side of a switch).
                slice_var = components_slice_var(cells, wl)
                if emul and slice_var:
                    two_var = slice_var * secs
                    one_var = statistics.variance(emul)
                    print(
                        f"  {'':18} emulated 1-s slices: {two_var / one_var:4.2f}x the information"
                        f" per second of the recorded {secs}-s slices"
                    )


def components_slice_var(cells, workload):
    """Mean within-round variance of slice-pair log-ratios, pooled over contender pairs."""
    slices = collections.defaultdict(dict)
    for (w, r), recs in cells.items():
        if w != workload:
            continue
        for s, _, c, secs in recs:
            if secs:
                slices[(r, c)][s] = statistics.fmean(secs)
    rounds = sorted({r for (r, _) in slices})
    contenders = sorted({c for (_, c) in slices})
    vs = []
    for a, b in itertools.combinations(contenders, 2):
        for r in rounds:
            A, B = slices.get((r, a)), slices.get((r, b))
            if not A or not B:
                continue
            common = sorted(set(A) & set(B))
            if len(common) >= 2:
                vs.append(statistics.variance([math.log(A[s] / B[s]) for s in common]))
    return statistics.fmean(vs) if vs else None


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
