#!/bin/sh
# One follow cycle on the modelled next release with the baseline-less run and precompiled headers (--precompiled-headers).
cd /work/pw/next
date -u +%s > cycle5.start
APT_CONFIG=/work/pw/next/apt.conf ./pgoforge-follow-bin5 follow --repo repo5 --work-dir follow5 --key-home archive-key --json > cycle5.json 2> cycle5.log
echo "exit $?" >> cycle5.log
date -u +%s > cycle5.end
