#!/usr/bin/env python3
"""Where the noise of an A/A calibration lies, from its results.jsonl (docs/bench/trust.md).

Usage: aa-noise-analysis.py RUN_DIR/results.jsonl

Per workload: the sd of each contender's log TPS over rounds, the correlation of `a` and
`a-again` over rounds (what pairing by round can cancel), the median coefficient of variation of
per-second TPS inside one run, its lag-1 autocorrelation, and the sd of the log-difference of
adjacent 1/2/5-second blocks of the same run (what alternating contenders every k seconds would
still face).
"""

import json
import math
import statistics as st
import sys
from collections import defaultdict


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    by = defaultdict(dict)
    for r in runs:
        by[r["workload"]][(r["round"], r["contender"])] = r
    for w, cells in by.items():
        rounds = sorted({k[0] for k in cells})
        def log_tps(c):
            return [math.log(cells[(i, c)]["result"]["transactions"] / cells[(i, c)]["result"]["total_time_s"])
                    for i in rounds if (i, c) in cells]
        la, lb = log_tps("a"), log_tps("a-again")
        cvs, acs, diffs = [], [], {1: [], 2: [], 5: []}
        for r in cells.values():
            iv = [x["tps"] for x in r["result"]["intervals"][1:] if x["tps"] > 0]
            if len(iv) < 6:
                continue
            cvs.append(st.pstdev(iv) / st.mean(iv))
            lv = [math.log(x) for x in iv]
            m = st.mean(lv)
            den = sum((x - m) ** 2 for x in lv)
            acs.append(sum((lv[i] - m) * (lv[i + 1] - m) for i in range(len(lv) - 1)) / den)
            for k in diffs:
                blocks = [st.mean(lv[i:i + k]) for i in range(0, len(lv) - k + 1, k)]
                diffs[k] += [blocks[i + 1] - blocks[i] for i in range(0, len(blocks) - 1, 2)]
        print(f"{w}: sd of log TPS a {st.stdev(la):.3f}, a-again {st.stdev(lb):.3f}; "
              f"corr over rounds {st.correlation(la, lb):.2f}; per-second cv (median) "
              f"{st.median(cvs):.3f}, lag-1 autocorrelation {st.median(acs):.2f}; sd of adjacent "
              "block log-differences " + ", ".join(f"{k} s {st.stdev(v):.3f}" for k, v in diffs.items()))


if __name__ == "__main__":
    main()
