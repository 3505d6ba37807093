#!/usr/bin/env python3
"""Would a steal covariate keep a benchmark's intervals honest? A seeded simulation.

Usage: steal-covariate-sim.py [BENCHMARKS]   (default 1000 per case)

A sliced A/B benchmark on a stealing host: 12 rounds; per round each contender runs 10 slices,
each losing an exponential share of its CPU to the hypervisor (mean 5 %, plus `bias` for the
variant: its servers see more or less of it on average), which costs 4 log-TPS units per unit of
steal share (the slope measured in docs/bench/steal/covariate.txt), on top of the true log effect,
the host's mood that round (shared by both: sd 5 %) and each slice's own noise (sd 2 %). The slope
is estimated within cells as tools/steal-covariate.py does; each round's log ratio then has
slope × steal difference subtracted, either as it is ("uncentred") or less its mean over rounds
("centred"), and a Student-t 95 % interval with n − 2 degrees of freedom is computed from the
adjusted ratios. Printed: how often each interval covers the steal-free effect (uncentred's
target) and the raw effect (what the benchmark measured: effect − 4 × bias, centred's target).
docs/bench/steal/README.md quotes it.
"""

import math
import random
import statistics as st
import sys

COST, ROUNDS, SLICES, T975_10 = 4.0, 12, 10, 2.228


def benchmark(effect, bias):
    groups, ys, xs = [], [], []
    for _ in range(ROUNDS):
        mood = random.gauss(0, 0.05)
        means = []
        for shift, extra in ((0.0, 0.0), (effect, bias)):
            sl = []
            for _ in range(SLICES):
                s = min(max(random.expovariate(20) + extra, 0.0), 0.6)
                sl.append((s, 10 + mood + shift - COST * s + random.gauss(0, 0.02)))
            groups.append(sl)
            means.append((st.mean(p[0] for p in sl), st.mean(p[1] for p in sl)))
        ys.append(means[1][1] - means[0][1])
        xs.append(means[1][0] - means[0][0])
    sxy = sxx = 0.0
    for g in groups:
        mx, my = st.mean(p[0] for p in g), st.mean(p[1] for p in g)
        for x, y in g:
            sxy += (x - mx) * (y - my)
            sxx += (x - mx) ** 2
    b, xm = sxy / sxx, st.mean(xs)
    out = {}
    for kind in ("uncentred", "centred"):
        adj = [y - b * ((x - xm) if kind == "centred" else x) for x, y in zip(xs, ys)]
        m, h = st.mean(adj), T975_10 * st.stdev(adj) / math.sqrt(ROUNDS)
        out[kind] = (m - h, m + h)
    return out


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    random.seed(20261203)
    for effect, bias in ((0.0, 0.0), (0.3, -0.02)):
        # The raw effect: the mean steal difference is `bias` before clamping (clamping at 0
        # changes it a little; estimated by simulation below).
        cover = {"uncentred": [0, 0], "centred": [0, 0]}
        raw_effect = effect - COST * (st.mean(
            min(max(random.expovariate(20) + bias, 0.0), 0.6) - min(max(random.expovariate(20), 0.0), 0.6)
            for _ in range(200000)))
        for _ in range(n):
            for kind, (lo, hi) in benchmark(effect, bias).items():
                cover[kind][0] += lo <= effect <= hi
                cover[kind][1] += lo <= raw_effect <= hi
        print(f"effect {effect:+.2f}, variant's extra steal {bias:+.2f} (raw effect {raw_effect:+.3f}), {n} benchmarks:")
        for kind, (steal_free, raw) in cover.items():
            print(f"  {kind:<9}: covers the steal-free effect {steal_free / n:.3f}, the raw effect {raw / n:.3f}")


if __name__ == "__main__":
    main()
