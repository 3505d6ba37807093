#!/bin/sh
# Issue 51 item 4, seed 004's configuration (pgobuild_percona_server): 16 tables x 2 M rows
# (7.6 GB on disk) against a 4.8 GB buffer pool at 16 threads. The binaries are those of
# docs/results/mariadb-10.11-default-saturated/ (10.11.18: pgoforge's baseline, the default
# package's pgo+lto+bolt trained on the 100 MB oltp+tpcc mix), the A/A control the baseline
# again. Debian's server is left out: a fourth datadir of 10 GB (with its 2.4 GB redo log) did
# not fit the disk beside the template. Runs of 10 s after 5 s to fit the session.
P=/work/bin/pgoforge-s31
W=/work/w53/old
date
$P bench \
  --baseline=baseline=$W/builds/mariadb-10.11-baseline-clang-22-70c859731284b4ab/build/sql/mariadbd \
  --binary=pgo+lto+bolt=$W/builds/mariadb-10.11-pgo_lto_bolt-clang-22-66cd9f0d21a230b0/build/sql/mariadbd.bolt \
  --workloads oltp_read_write,oltp_read_only --threads 16 \
  --tables 16 --table-size 2000000 --buffer-pool-mb 4915 \
  --time 10 --warmup 5 \
  --work-dir /work/w53/seed004 --run /work/w53/seed004/run
echo "exit $?"
date
