#!/usr/bin/env bash
# The first real training run on this machine: MariaDB 10.11.18 (default recipe) with gcc —
# pgo-gen build, training, pgo+bolt build, BOLT by instrumentation, correctness gate.
# Every stage is a pgoforge subcommand; builds are cached, so a rerun skips finished ones.
# Usage: tools/real-run-train.sh [WORK_DIR] [PGOFORGE]
set -euo pipefail
WORK=${1:-pgoforge-work}
PGOFORGE=${2:-target/release/pgoforge}
MIX=(--mix "oltp_point_select:30,oltp_read_only:60,oltp_read_only@text:20,oltp_read_write:40" --tables 2 --table-size 50000)
stamp() { date +%s; }

t0=$(stamp)
"$PGOFORGE" build --variant baseline --work-dir "$WORK" --json > "$WORK/baseline.json"
t1=$(stamp)
"$PGOFORGE" build --variant pgo-gen --work-dir "$WORK" --json > "$WORK/pgo-gen.json"
t2=$(stamp)
"$PGOFORGE" train --work-dir "$WORK" "${MIX[@]}" --json > "$WORK/train.json"
t3=$(stamp)
# The stored profile's record: its data is the gcda directory beside meta.json.
profile=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['dir'] + '/gcda')" "$WORK/train.json")
"$PGOFORGE" build --variant pgo+bolt --profile "$profile" --work-dir "$WORK" --json > "$WORK/pgo-bolt.json"
t4=$(stamp)
pgo_bin=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['binary'])" "$WORK/pgo-bolt.json")
base_bin=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['binary'])" "$WORK/baseline.json")
"$PGOFORGE" bolt --binary "$pgo_bin" --work-dir "$WORK" "${MIX[@]}" | tee "$WORK/bolt.txt"
t5=$(stamp)
"$PGOFORGE" gate --baseline "$base_bin" --candidate "pgo+bolt=$pgo_bin" --candidate "pgo+bolt.bolt=$pgo_bin.bolt" --work-dir "$WORK" | tee "$WORK/gate.txt"
t6=$(stamp)
echo "stage seconds: baseline $((t1-t0)) pgo-gen $((t2-t1)) train $((t3-t2)) pgo+bolt $((t4-t3)) bolt $((t5-t4)) gate $((t6-t5))" | tee "$WORK/stages.txt"
