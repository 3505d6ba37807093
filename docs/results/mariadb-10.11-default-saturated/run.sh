#!/bin/sh
# Issue 50 item 4 with item 5's threads: the default package (clang PGO+ThinLTO+BOLT trained on
# oltp+tpcc, the default mix) against Debian's own 10.11.18 mariadbd, the threads chosen per
# workload before round 1 (--threads auto, the default), on this host. The work dir is the
# stale-profile study's old run (source 10.11.18, baseline and pgo-gen builds reused; its
# OLTP-only training superseded by the default mix). Runs of 10 s after 3 s (default 20/5) and
# the checksum gate (default: MTR) to fit the session.
P=/work/bin/pgoforge-s30
date
$P run --source-version 1:10.11.18-0+deb12u1 --time 10 --warmup 3 --gate quick \
  --work-dir /work/w53/old
echo "exit $?"
date
