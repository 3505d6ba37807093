#!/bin/bash
# Paused-build experiment: does tpcc on a fresh MySQL copy start cold (O_DIRECT reads)?
B=/work/pgoforge-work/builds/mysql-9.7-baseline-clang-22-53a1c226009d6ee2/build/runtime_output_directory/mysqld
P=/work/main/target/release/pgoforge
cd /work/exp/tpcc-warm
common="--baseline base=$B --binary again=$B --workloads tpcc --rounds 2 --time 20 --slice 2 --allow-noisy --work-dir /work/exp/wd2"
vmstat -t 1 > vmstat.txt &
VM=$!
echo "A $(date -u +%T)"; $P bench $common --warmup 5 --run /work/exp/tpcc-warm/A-odirect > A.out 2>&1
echo "B $(date -u +%T)"; $P bench $common --warmup 5 --set innodb_flush_method=fsync --run /work/exp/tpcc-warm/B-fsync > B.out 2>&1
echo "C $(date -u +%T)"; $P bench $common --warmup 60 --run /work/exp/tpcc-warm/C-warm60 > C.out 2>&1
echo "end $(date -u +%T)"
kill $VM
