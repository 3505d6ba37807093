#!/usr/bin/env bash
# The sliced design against the plain one, in equal wall time, on one idle machine: an A/A pair
# (the baseline against itself) and an A/B pair (the baseline against an optimized build), each
# measured both ways, the four benchmarks alternating so that a change in the host's mood hits
# both designs. docs/bench/trust.md quotes what this printed.
#
#   scripts/slice-experiment.sh BASELINE_MARIADBD OPTIMIZED_MARIADBD OUT_DIR [SLICE_SECONDS]
set -euo pipefail
base=$1 opt=$2 out=$3 slice=${4:-2}
pgoforge=${PGOFORGE:-target/release/pgoforge}
mkdir -p "$out"
common=(--workloads oltp_read_only --threads 4 --rounds ${ROUNDS:-8} --time 20 --warmup 5
        --tables 4 --table-size 100000 --busy-wait 60 --allow-noisy --work-dir "$out/work")
run() { # name, extra args...
  local name=$1; shift
  local t0; t0=$(date +%s)
  "$pgoforge" bench "${common[@]}" --run "$out/$name" "$@" > "$out/$name.txt" 2> "$out/$name.log"
  echo "$name: $(( $(date +%s) - t0 )) s wall" | tee -a "$out/wall.txt"
}
run aa-plain  --baseline "a=$base" --binary "a-again=$base"
run aa-sliced --baseline "a=$base" --binary "a-again=$base" --slice "$slice"
run ab-plain  --baseline "base=$base" --binary "opt=$opt"
run ab-sliced --baseline "base=$base" --binary "opt=$opt" --slice "$slice"
for r in aa-plain aa-sliced ab-plain ab-sliced; do
  echo "== $r"
  python3 - "$out/$r" <<'PY'
import json, math, statistics, sys
d = sys.argv[1]
rep = json.load(open(f"{d}/report.json"))
for c in rep["cells"]:
    k = c.get("tps_vs_baseline")
    if not k:
        print(f"  {c['contender']}: TPS median {c['tps']['median']:.0f}")
        continue
    base = [x for x in rep["cells"] if x["contender"] == rep["plan"]["contenders"][0]["name"]][0]
    b = dict((r, v) for r, v in base["tps_rounds"])
    logs = [math.log(v / b[r]) for r, v in c["tps_rounds"] if r in b]
    sd = statistics.stdev(logs)
    lo, hi = k["ratio_ci95"]
    print(f"  {c['contender']}: TPS median {c['tps']['median']:.0f}, ratio {(k['ratio']-1)*100:+.2f}%, "
          f"per-round sd of log-ratios {sd*100:.2f}%, t 95% [{(lo-1)*100:+.2f}, {(hi-1)*100:+.2f}], "
          f"p {k['p_value']:.4f}")
print(f"  host per-second CV: {rep.get('per_second_cv', float('nan'))*100:.1f}%")
PY
done | tee "$out/summary.txt"
