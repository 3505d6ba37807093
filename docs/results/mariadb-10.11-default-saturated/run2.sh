#!/bin/sh
# The same run resumed with cachegrind's counts (and each cell's costliest functions): the
# benchmark and every earlier stage are reused; cachegrind's counts are deterministic, so this
# ran beside the test suite.
P=/work/bin/pgoforge-s31
date
$P run --source-version 1:10.11.18-0+deb12u1 --time 10 --warmup 3 --gate quick --cachegrind \
  --work-dir /work/w53/old
echo "exit $?"
date
