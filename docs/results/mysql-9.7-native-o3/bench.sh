#!/bin/bash
# Issue 28: seed 000's pgo+lto+native at real -O3 -march=native on its own profile, against GCC's
# baseline and GCC's PGO (flags style), on an idle machine (the build chain paused by pause.sh).
B=/work/pgoforge-work/builds
cd /work/exp/native/o3/bench
/work/main/target/release/pgoforge bench \
  --baseline gcc-baseline=$B/mysql-9.7-baseline-gcc-12-7eecd0c07a540515/build/runtime_output_directory/mysqld \
  --binary gcc-pgo=$B/mysql-9.7-flags-pgo-gcc-12-7df5edbe118d1bc3/build/runtime_output_directory/mysqld \
  --binary gcc-pgo+lto+native=$B/mysql-9.7-flags-pgo_lto_native-gcc-12-1a4864706203c9b8/build/runtime_output_directory/mysqld \
  --workloads point_select,read_only,read_write --target-ci 5 --budget-minutes 50 \
  --work-dir /work/bench-work --run /work/exp/native/o3/bench/run "$@"
