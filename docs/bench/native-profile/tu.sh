#!/bin/bash
# Issue 28: one InnoDB unit compiled as the pgo+lto+native build compiles it, on its own native
# profile and on the generic one; count GCC's coverage mismatches (functions whose profile is dropped).
for t in buf0buf.cc lock0lock.cc btr0cur.cc; do
  for p in own:/work/pgoforge-work/profiles/4bac5b5703cb3ee5/gcda generic:/work/pgoforge-work/profiles/da98e57c8f3a2888/gcda; do
    name=${p%%:*}; dir=${p#*:}
    cmd=$(sed -e "s|-fprofile-prefix-path=/work/pgoforge-work/builds/mysql-9.7-flags-pgo_lto_native-gcc-12-c1a5132a760947f7/build|-fprofile-prefix-path=/work/exp/native/tu/build|; s|-fprofile-use=[^ ]*|-fprofile-use=$dir|; s|-MF [^ ]*|-MF /dev/null|; s|^.*&& ||" cmd-$t.txt)
    out=$(echo "$cmd" | grep -o "\-o [^ ]*" | cut -c4-); mkdir -p /work/exp/native/tu/build/$(dirname $out)
    ( cd /work/exp/native/tu/build && eval "nice $cmd" ) > tu-$t-$name.log 2>&1
    echo "$t $name rc=$? mismatches=$(grep '\[-Wcoverage-mismatch\]' tu-$t-$name.log | grep -vc 'source locations') functions=$(grep -B1 'Wcoverage-mismatch' tu-$t-$name.log | grep -o 'In function ‘[^’]*’' | sort -u | wc -l)"
  done
done
