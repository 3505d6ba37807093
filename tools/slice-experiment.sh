#!/usr/bin/env bash
# Benchmark designs against each other in equal wall time, on one idle machine: an A/A pair (the
# baseline against itself) and an A/B pair (the baseline against an optimized build), each measured
# with every design named in DESIGNS (0 = the plain design, N = slices of N seconds), the
# benchmarks in an ABBA order so that a drift of the host's mood hits every design alike.
# docs/bench/trust.md quotes what this printed.
#
#   [DESIGNS="0 2"] [ROUNDS=8] [WORKLOADS=oltp_read_only] [WORK=a pgoforge work dir] \
#     tools/slice-experiment.sh BASELINE_SERVER OPTIMIZED_SERVER OUT_DIR
#
# The first experiment (2026-12-02, DESIGNS="0 2") named its outputs aa-plain, aa-sliced, ab-plain
# and ab-sliced; this form names them aa-plain, aa-slice2, …
set -euo pipefail
base=$1 opt=$2 out=$3
read -r -a designs <<< "${DESIGNS:-0 2}"
pgoforge=${PGOFORGE:-target/release/pgoforge}
mkdir -p "$out"
common=(--workloads "${WORKLOADS:-oltp_read_only}" --threads 4 --rounds "${ROUNDS:-8}" --time 20
        --warmup 5 --tables 4 --table-size 100000 --busy-wait 60 --allow-noisy
        --work-dir "${WORK:-$out/work}")
name_of() { if [ "$1" = 0 ]; then echo plain; else echo "slice$1"; fi; }
run() { # pair (aa|ab), design
  local pair=$1 design=$2 name t0
  name="$pair-$(name_of "$design")"
  t0=$(date +%s)
  if [ "$pair" = aa ]; then set -- --baseline "a=$base" --binary "a-again=$base"
  else set -- --baseline "base=$base" --binary "opt=$opt"; fi
  "$pgoforge" bench "${common[@]}" --run "$out/$name" --slice "$design" "$@" \
    > "$out/$name.txt" 2> "$out/$name.log"
  echo "$name: $(( $(date +%s) - t0 )) s wall" | tee -a "$out/wall.txt"
  names+=("$name")
}
names=()
for d in "${designs[@]}"; do run aa "$d"; done
reversed=(); for d in "${designs[@]}"; do reversed=("$d" "${reversed[@]}"); done
for d in "${reversed[@]}"; do run ab "$d"; done
for r in "${names[@]}"; do
  echo "== $r"
  python3 - "$out/$r" <<'PY'
import json, math, statistics, sys
d = sys.argv[1]
rep = json.load(open(f"{d}/report.json"))
first = rep["plan"]["contenders"][0]["name"]
for c in rep["cells"]:
    k = c.get("tps_vs_baseline")
    if not k:
        print(f"  {c['workload']} {c['contender']}: TPS median {c['tps']['median']:.0f}")
        continue
    base = [x for x in rep["cells"] if x["contender"] == first and x["workload"] == c["workload"]][0]
    b = dict((r, v) for r, v in base["tps_rounds"])
    logs = [math.log(v / b[r]) for r, v in c["tps_rounds"] if r in b]
    sd = statistics.stdev(logs)
    lo, hi = k["ratio_ci95"]
    print(f"  {c['workload']} {c['contender']}: TPS median {c['tps']['median']:.0f}, "
          f"ratio {(k['ratio']-1)*100:+.2f}%, per-round sd of log-ratios {sd*100:.2f}%, "
          f"t 95% [{(lo-1)*100:+.2f}, {(hi-1)*100:+.2f}], p {k['p_value']:.4f}")
print(f"  host per-second CV: {rep.get('per_second_cv', float('nan'))*100:.1f}%")
PY
done | tee "$out/summary.txt"
