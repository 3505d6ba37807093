#!/usr/bin/env bash
# Power under the rule pgoforge's reports apply (the exact sign-flip test at 5 % under Holm, and
# the minimum change), for the per-round scatters measured on the hosts docs/bench/trust.md names:
# `pgoforge power` per row. Prints a Markdown table (kept in docs/bench/power/table.md).
# Usage: tools/power-table.sh [path to pgoforge]
set -euo pipefail
bin=${1:-target/release/pgoforge}
row() { # label sd rounds comparisons min_effect change [df]
    "$bin" power --sd "$2" --rounds "$3" --comparisons "$4" --min-effect "$5" --change "$6" \
        ${7:+--df "$7"} --json | python3 -c '
import json, sys
v = json.load(sys.stdin)
f = lambda x: "not reachable" if x is None else f"{x:.1f} %"
rng = v["detectable_range_pct"]
r = f" [{f(rng[0])}, {f(rng[1])}]" if rng else ""
n = v["rounds_for_change"]
never = n is None and v["change_pct"] <= v["min_effect_pct"]
n = "never" if never else ("> 2000" if n is None else str(n))
cells = [sys.argv[1], "%g %%" % v["sd_pct"], str(v["rounds"]), str(v["comparisons"]),
         "%g %%" % v["min_effect_pct"], f(v["detectable_pct"]) + r, "%g %%" % v["change_pct"],
         "%.0f %%" % (v["power_at_change"] * 100), n]
print("| " + " | ".join(cells) + " |")
' "$1"
}
echo "| scatter measured on | scatter per round | rounds | comparisons | minimum change | detectable (80 % power) [over the scatter's 95 % interval] | true change | power for it | rounds for 80 % power on it |"
echo "|---|---|---|---|---|---|---|---|---|"
# AMD host e3e24d933f7d4d5c (noisy): two contenders alone, 2-s slices, 3.0-4.0 % (3.3 % pooled,
# 14 degrees of freedom); 16 rounds are 15 minutes per pair.
row "AMD noisy, a pair alone (pooled)" 3.3 16 1 2 2 14
row "AMD noisy, a pair alone (pooled)" 3.3 24 1 2 2 14
row "AMD noisy, a pair alone, two workloads" 3.3 16 2 2 2 14
row "AMD noisy, a pair alone (lowest)" 3.0 16 1 2 2
row "AMD noisy, a pair alone (highest)" 4.0 16 1 2 2
row "AMD noisy, a pair alone, --min-effect 1" 3.3 16 1 1 2 14
row "AMD noisy, a pair alone, --min-effect 0" 3.3 16 1 0 2 14
row "AMD noisy, a pair alone: a true 3 %" 3.3 16 1 2 3 14
# Pairs inside five- and six-server sliced runs on the same host: 5.5 % per round.
row "AMD noisy, pairs in 5-6-server runs" 5.5 12 16 2 3 11
# The plain design's floor there (2026-12-01, 10 rounds, docs/bench/aa-floor/).
row "AMD noisy, plain design, point_select" 11.1 10 1 2 3 9
row "AMD noisy, plain design, read_only" 18.7 10 1 2 3 9
row "AMD noisy, plain design, read_write" 12.9 10 1 2 3 9
# Intel host 461fda92c6a91592 (quiet): the A/A control of docs/results/mysql-9.7-clang-quiet-host/
# (8 rounds, 3 comparisons).
row "Intel quiet, point_select" 1.7 8 3 2 2 7
row "Intel quiet, read_only" 1.6 8 3 2 2 7
row "Intel quiet, read_write" 1.4 8 3 2 2 7
row "Intel quiet, read_only: a true 3 %" 1.6 8 3 2 3 7
row "Intel quiet, read_only, --min-effect 1" 1.6 8 3 1 2 7
# AMD host bb2b515294345f5c (2026-12-04, quiet: per-second 3.7 %): `pgoforge calibrate` of
# Debian's mariadbd, 12 rounds of 10-s cells in 2-s slices (docs/bench/power/calibration.md).
row "AMD quiet (today), point_select" 1.65 12 1 2 2 11
row "AMD quiet (today), read_only" 1.93 12 1 2 2 11
row "AMD quiet (today), read_write" 2.8 12 1 2 2 11
row "AMD quiet (today), read_write: a true 3 %" 2.8 12 1 2 3 11
row "AMD quiet (today), read_write, a default run" 2.8 12 6 2 3 11
row "AMD quiet (today), read_write, --min-effect 1" 2.8 12 1 1 2 11
