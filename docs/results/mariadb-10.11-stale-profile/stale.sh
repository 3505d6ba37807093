#!/bin/sh
# The stale run: the modelled next release built with the last release's profiles (its package,
# made by `pgoforge package pgo+lto+bolt --work-dir /work/w53/old` after old.sh: no variant of
# its token benchmark won, so nothing was packaged), benchmarked against its baseline and the
# fresh run's builds of the same tree (fresh.sh), with cachegrind's counts beside the timing.
P=/work/bin/pgoforge63
W=/work/w53/work
FRESH=$(ls -d $W/builds/mariadb-10.11-pgo_lto_bolt-clang-22-*/build/sql)
date
$P run --source /work/w53/next-src --compiler clang --variants pgo+lto+bolt \
  --profile-from /work/w53/old/packages/mariadb-10.11.18-pgo+lto+bolt-clang-22.tar.zst \
  --binary fresh=$FRESH/mariadbd --binary fresh+bolt=$FRESH/mariadbd.bolt \
  --workloads oltp_point_select,oltp_read_write --time 10 --warmup 3 \
  --gate quick --cachegrind --no-package --work-dir $W > /work/w53/stale.log 2>&1
echo "stale exit $?"
date
