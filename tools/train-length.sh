#!/bin/sh
# How long GCC PGO training needs to be: trains a run's pgo-gen build with the standard mix scaled
# to 1/8, 1/4, 1/2 and 1/1 (about 37, 75, 150 and 300 s), each starting on a copy of the run's
# dataset template (made by BASELINE, as in `pgoforge run`), then compares every profile with the
# run's own (a second full-length training) by tools/gcda-overlap.py (gcov-tool's own overlap
# prints 0 % for GCC 12 profiles). The fresh 1/1 profile against the run's gives the floor: what
# two trainings of the same length share.
#
#   tools/train-length.sh WORK_DIR BASELINE_BINARY RUN_PROFILE_GCDA_DIR OUT_DIR [PGOFORGE]
#
# Results in docs/bench/train-length.md.
set -eu
work=$1
base=$2
ref=$3
out=$4
pgoforge=${5:-pgoforge}
mkdir -p "$out"
: >"$out/dirs.txt"
for f in 8 4 2 1; do
  mix="oltp_point_select:$((60 / f)):4,oltp_read_only:$((120 / f)):4,oltp_read_only@text:$((40 / f)):4,oltp_read_write:$((80 / f)):4"
  echo "=== 1/$f: $mix $(date -u +%T)"
  "$pgoforge" train --work-dir "$work" --mix "$mix" --dataset-from "$base" --json >"$out/train-$f.json"
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dir"] + "/gcda")' "$out/train-$f.json" >>"$out/dirs.txt"
done
python3 "$(dirname "$0")/gcda-overlap.py" "$ref" $(cat "$out/dirs.txt") | tee "$out/overlap.md"
