#!/bin/sh
# The next release trained afresh: the modelled tree (make-next-release.py) through the whole
# pipeline, same recipe and training mix as the last release's run; its builds are the stale run's
# "fresh" contenders.
P=/work/bin/pgoforge63
date
$P run --source /work/w53/next-src --compiler clang --variants pgo+lto+bolt --train-mix oltp \
  --workloads oltp_point_select --time 2 --warmup 1 --rounds 2 --allow-few-rounds \
  --gate quick --no-aa --no-package --no-distro --work-dir /work/w53/work > /work/w53/fresh.log 2>&1
echo "fresh exit $?"
date
