#!/bin/sh
# Issue 51 item 4, seed 004's TPC-C configuration: sysbench-tpcc at scale 10 with 10 table
# copies (100 warehouses, about 12 GB) against seed 004's 4.8 GB buffer pool, 16 threads.
# The binaries are those of docs/results/mariadb-10.11-myrocks-training/ (10.11.18 with the
# RocksDB plugin, unused here): pgoforge's clang baseline and the clang PGO+ThinLTO build
# trained on the default InnoDB oltp+tpcc mix; the A/A control is the baseline again.
P=/work/bin/pgoforge-s35
W=/work/run1/pgoforge-work
date
$P bench \
  --baseline=baseline=$W/builds/mariadb-10.11-baseline-clang-22-11f512cdf0fa86da/build/sql/mariadbd \
  --binary=pgo+lto=$W/builds/mariadb-10.11-pgo_lto-clang-22-e8e3221fcf9840fc/build/sql/mariadbd \
  --workloads tpcc --threads 16 \
  --tpcc-scale 10 --tpcc-tables 10 --buffer-pool-mb 4915 \
  --time 20 --warmup 10 --rounds 8 \
  --work-dir /work/w51tpcc/wd --run /work/w51tpcc/wd/run
echo "exit $?"
date
