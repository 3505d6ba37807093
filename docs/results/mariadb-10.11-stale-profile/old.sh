#!/bin/sh
# The last release's run: 10.11.18 from the mirror, clang pgo+lto+bolt trained on the oltp mix; its
# work dir is the stale run's --profile-from.
P=/work/bin/pgoforge63
date
$P run --install-deps --compiler clang --variants pgo+lto+bolt --train-mix oltp \
  --workloads oltp_point_select --time 2 --warmup 1 --rounds 2 --allow-few-rounds \
  --gate quick --no-aa --no-package --work-dir /work/w53/old > /work/w53/old.log 2>&1
echo "old exit $?"
date
