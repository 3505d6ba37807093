#!/bin/sh
# How long BOLT's profiling run needs to be: profiles one bolt-ready server with the standard
# training mix scaled to 1/8, 1/4, 1/2 and 1/1, then compares the profiles (fdata-overlap.py) and
# BOLT's outputs under cachegrind (instructions, I1 misses, mispredicts per transaction).
#
#   tools/bolt-profile-length.sh BOLT_READY_SERVER OUT_DIR [PGOFORGE]
#
# The server is copied beside itself as <name>-conv (share files are found next to the binary), so
# the original's .bolt output is left alone. Results in docs/bench/train.md.
set -eu
src=$1
out=$2
pgoforge=${3:-pgoforge}
bin="$src-conv"
cp "$src" "$bin"
mkdir -p "$out"
flags="-reorder-blocks=ext-tsp -reorder-functions=cdsort -split-functions -split-all-cold -split-eh -dyno-stats -icf=all"
for f in 8 4 2 1; do
  mix="oltp_point_select:$((60 / f)):4,oltp_read_only:$((120 / f)):4,oltp_read_only@text:$((40 / f)):4,oltp_read_write:$((80 / f)):4"
  echo "=== 1/$f: $mix $(date)"
  "$pgoforge" bolt --binary "$bin" --work-dir "$out/w$f" --mix "$mix" --json >"$out/out-$f.json"
  # Each profile's own BOLT output (the bolt command writes one file beside the binary).
  /usr/lib/llvm-22/bin/llvm-bolt "$bin" -o "$bin.bolt$f" --data "$(ls "$out"/w$f/profiles/*/merged.fdata)" \
    $flags >"$out/bolt-$f.log" 2>&1
done
python3 "$(dirname "$0")/fdata-overlap.py" "$out"/w1/profiles/*/merged.fdata \
  "$out"/w8/profiles/*/merged.fdata "$out"/w4/profiles/*/merged.fdata "$out"/w2/profiles/*/merged.fdata
"$pgoforge" bench --measure cachegrind --baseline "full=$bin.bolt1" --binary "half=$bin.bolt2" \
  --binary "eighth=$bin.bolt8" --binary "unbolted=$bin" --workloads oltp_point_select,oltp_read_only \
  --work-dir "$out/cg" --run "$out/cg/run"
