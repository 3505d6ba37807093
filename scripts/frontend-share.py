#!/usr/bin/env python3
"""What share of a translation unit's compile time is the compiler's front end (parsing, mostly
headers): compiles each given unit of a configured Ninja build tree with its own command line,
then again with -fsyntax-only, and prints both times (docs/bench/mysql-build.md, precompiled
headers). Run it on an idle machine: the times are wall times.

usage: frontend-share.py BUILD_DIR SOURCE_SUFFIX...
e.g.:  frontend-share.py $B sql/sql_select.cc storage/innobase/btr/btr0cur.cc"""
import json, shlex, subprocess, sys, tempfile, time, os

if len(sys.argv) < 3:
    sys.exit(__doc__)
build = sys.argv[1]
db = json.loads(subprocess.run(["ninja", "-C", build, "-t", "compdb"], capture_output=True,
                               text=True, check=True).stdout)
out = os.path.join(tempfile.mkdtemp(), "unit.o")
for tu in sys.argv[2:]:
    e = next((e for e in db if e["file"].endswith(tu) and e["output"].endswith(".o")), None)
    if e is None:
        print(f"{tu}: not in the compilation database")
        continue
    args = shlex.split(e["command"])
    args[args.index("-o") + 1] = out
    if "-MD" in args:  # no dependency file next to the build's own
        i = args.index("-MD")
        del args[i:i + 5]
    t0 = time.time()
    subprocess.run(args, cwd=e["directory"], capture_output=True, check=True)
    full = time.time() - t0
    t0 = time.time()
    subprocess.run(args + ["-fsyntax-only"], cwd=e["directory"], capture_output=True, check=True)
    front = time.time() - t0
    print(f"{tu}: compile {full:.1f} s, front end (-fsyntax-only) {front:.1f} s = {100 * front / full:.0f} %")
