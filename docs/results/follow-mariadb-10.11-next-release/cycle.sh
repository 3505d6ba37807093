#!/bin/sh
# One follow cycle on the modelled next release (1:10.11.19-0+deb12u1 = 10.11.18 + 228 fix-shaped
# edits, served by a signed local mirror; Debian's real 10.11.19 mariadb-server-core beside it).
cd /work/pw/next
date -u +%s > cycle.start
APT_CONFIG=/work/pw/next/apt.conf ./pgoforge-follow-bin follow --repo repo --work-dir follow --key-home archive-key --json > cycle.json 2> cycle.log
echo "exit $?" >> cycle.log
date -u +%s > cycle.end
