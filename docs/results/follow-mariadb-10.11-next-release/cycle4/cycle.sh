#!/bin/sh
# One follow cycle on the modelled next release with the baseline-less run (--baseline debian, no A/A).
cd /work/pw/next
date -u +%s > cycle4.start
APT_CONFIG=/work/pw/next/apt.conf ./pgoforge-follow-bin4 follow --repo repo4 --work-dir follow4 --key-home archive-key --json > cycle4.json 2> cycle4.log
echo "exit $?" >> cycle4.log
date -u +%s > cycle4.end
