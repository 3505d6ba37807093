#!/bin/sh
# Issue 50 item 2 (+ issue 57 item 5's cachegrind column): -O2 vs -O3, x86-64 vs v3 vs native on
# clang's PGO+ThinLTO, one run, all four optimized builds from the same reused 10.11.18 profile
# (the stale-profile study's old run), against the baseline and Debian's own 10.11.18 mariadbd.
P=/work/bin/pgoforge-s29
date
$P run --profile-from /work/w53/old/packages/mariadb-10.11.18-pgo+lto+bolt-clang-22.tar.zst \
  --variants pgo+lto,pgo+lto+O3,pgo+lto+v3,pgo+lto+march-native \
  --source-version 1:10.11.18-0+deb12u1 \
  --workloads oltp_point_select,oltp_read_only,oltp_read_write --time 10 --warmup 3 --rounds 10 \
  --cachegrind --gate quick --no-package --work-dir /work/w50cpu
echo "exit $?"
date
