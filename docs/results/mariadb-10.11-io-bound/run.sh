#!/bin/sh
# Issue 51 item 4: a cell made I/O-bound on purpose. Seed 003's dataset (10 tables x 1 M rows,
# about 2.4 GB) against a 1 GiB buffer pool, the servers' reads throttled to a slow disk's
# 500 read operations/s (cgroup v1 blkio, read_iops_device on the work dir's disk; InnoDB reads
# with O_DIRECT, so every pool miss pays it). The dataset template is made before the throttle
# (THROTTLE=0 first), so only the benchmark's servers run on the slow disk. Binaries as in
# docs/results/mariadb-10.11-tpcc-scale10/ (the MyRocks run's clang baseline and its
# InnoDB-trained clang PGO+ThinLTO), the A/A control the baseline again.
P=/work/bin/pgoforge-s35
W=/work/run1/pgoforge-work
CG=/sys/fs/cgroup/blkio/pgoforge-slow-disk
if [ "${THROTTLE:-1}" = 1 ]; then
  mkdir -p $CG
  DEV=$(lsblk -no MAJ:MIN "$(findmnt -no SOURCE --target /work)" | tr -d ' ')
  echo "$DEV ${IOPS:-500}" > $CG/blkio.throttle.read_iops_device
  echo $$ > $CG/cgroup.procs
  echo "throttled: $(cat $CG/blkio.throttle.read_iops_device) read ops/s"
fi
date
$P bench \
  --baseline=baseline=$W/builds/mariadb-10.11-baseline-clang-22-11f512cdf0fa86da/build/sql/mariadbd \
  --binary=pgo+lto=$W/builds/mariadb-10.11-pgo_lto-clang-22-e8e3221fcf9840fc/build/sql/mariadbd \
  --workloads oltp_read_only --threads 16 \
  --tables 10 --table-size 1000000 --buffer-pool-mb 1024 \
  --time 10 --warmup 5 ${EXTRA} \
  --work-dir /work/w51io/wd --run ${RUN:-/work/w51io/wd/run-slow}
echo "exit $?"
date
