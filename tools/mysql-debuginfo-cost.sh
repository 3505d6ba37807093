#!/usr/bin/env bash
# What debug info costs a MySQL build: compiles the given translation units of a configured
# Ninja build tree with its own command line three times — -g (RelWithDebInfo's default), -g1
# (MINIMAL_RELWITHDEBINFO, the recipe's) and -g0 — one at a time, and prints the seconds and the
# object's size for each. Run on an idle machine.
#   usage: tools/mysql-debuginfo-cost.sh BUILD_DIR SOURCE_SUFFIX...
#   e.g.:  tools/mysql-debuginfo-cost.sh $B sql/sql_yacc.cc storage/innobase/handler/ha_innodb.cc
set -euo pipefail
build=$1; shift
cd "$build"
ninja -t compdb > /tmp/compdb.$$.json
out=/tmp/dbg.$$.o
printf '| translation unit | -g s | -g1 s | -g0 s | -g KiB | -g1 KiB | -g0 KiB |\n|---|---:|---:|---:|---:|---:|---:|\n'
for tu in "$@"; do
  cmd=$(python3 - "$tu" /tmp/compdb.$$.json <<'PY'
import json, sys, shlex
tu, db = sys.argv[1], json.load(open(sys.argv[2]))
e = next(e for e in db if e["file"].endswith(tu) and e["output"].endswith(".o"))
args = shlex.split(e["command"])
# Drop -o OUT, every -g level and ccache; the level under test is appended by the caller.
keep, skip = [], False
for a in args:
    if skip: skip = False; continue
    if a == "-o": skip = True; continue
    if a.startswith("-g") and a[2:] in ("", "0", "1", "2", "3"): continue
    if a.endswith("ccache"): continue
    keep.append(a)
print("cd " + shlex.quote(e["directory"]) + " && " + " ".join(shlex.quote(a) for a in keep))
PY
)
  row="| $tu |"; sizes=""
  for g in -g -g1 -g0; do
    t0=$(date +%s.%N)
    bash -c "$cmd $g -o $out"
    t1=$(date +%s.%N)
    row="$row $(python3 -c "print(f'{$t1-$t0:.1f}')") |"
    sizes="$sizes $(( $(stat -c %s $out) / 1024 )) |"
  done
  echo "$row$sizes"
done
rm -f /tmp/compdb.$$.json "$out"
