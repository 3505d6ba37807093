#!/bin/sh
# Issue 51 items 2 and 4, seed 003's sweep (the Intel compiler study): 10 tables x 1 M rows
# (2.4 GB on disk), client threads 4, 16, 64 and 512, a buffer pool below the data (1 GiB) and
# one above it (4 GiB), oltp_read_write. The binaries are those of
# docs/results/mariadb-10.11-default-saturated/ (10.11.18: pgoforge's baseline, the default
# package's pgo+lto+bolt trained on the 100 MB oltp+tpcc mix); the A/A control is the baseline
# again at the first pool size. Runs of 10 s after 5 s to fit the session.
P=/work/bin/pgoforge-s32
W=/work/w53/old
date
$P bench \
  --baseline=baseline=$W/builds/mariadb-10.11-baseline-clang-22-70c859731284b4ab/build/sql/mariadbd \
  --binary=pgo+lto+bolt=$W/builds/mariadb-10.11-pgo_lto_bolt-clang-22-66cd9f0d21a230b0/build/sql/mariadbd.bolt \
  --workloads oltp_read_write --threads 4,16,64,512 \
  --tables 10 --table-size 1000000 --sweep-buffer-pool-mb 1024,4096 \
  --time 10 --warmup 5 \
  --work-dir /work/w51sweep --run /work/w51sweep/run
echo "exit $?"
date
