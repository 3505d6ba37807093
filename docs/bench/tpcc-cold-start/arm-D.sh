#!/bin/bash
B=/work/pgoforge-work/builds/mysql-9.7-baseline-clang-22-53a1c226009d6ee2/build/runtime_output_directory/mysqld
P=/work/main/target/release/pgoforge
cd /work/exp/tpcc-warm
vmstat -t 1 > vmstatD.txt &
VM=$!
echo "D $(date -u +%T)"; $P bench --baseline base=$B --binary again=$B --binary c3=$B --binary c4=$B --workloads oltp_read_write,tpcc --rounds 1 --time 20 --slice 2 --allow-noisy --work-dir /work/exp/wd2 --warmup 5 --run /work/exp/tpcc-warm/D-rw-then-tpcc > D.out 2>&1
echo "end $(date -u +%T)"
kill $VM
