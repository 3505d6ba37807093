#!/usr/bin/env python3
"""What share of a translation unit's compile time its preprocessing takes — the part sccache-dist
leaves on the client (docs/bench/scale.md) — and the front end's (-fsyntax-only), what
precompiled headers can save (docs/bench/mysql-build.md). Compiles each given unit of a configured Ninja build
tree with its own command line, then preprocesses it alone (-E), and prints both times.

usage: preprocess-share.py BUILD_DIR SOURCE_SUFFIX...
e.g.:  preprocess-share.py $B sql/item_func.cc storage/innobase/handler/ha_innodb.cc"""
import json, shlex, subprocess, sys, time

if len(sys.argv) < 3:
    sys.exit(__doc__)
build = sys.argv[1]
db = json.loads(subprocess.run(["ninja", "-C", build, "-t", "compdb"], capture_output=True,
                               text=True, check=True).stdout)
for tu in sys.argv[2:]:
    e = next((e for e in db if e["file"].endswith(tu) and e["output"].endswith(".o")), None)
    if e is None:
        print(f"{tu}: not in the compilation database")
        continue
    args = shlex.split(e["command"])
    args[args.index("-o") + 1] = "/tmp/preprocess-share.o"
    t0 = time.time()
    subprocess.run(args, cwd=e["directory"], capture_output=True, check=True)
    compile_s = time.time() - t0
    pre = [a for a in args if a != "-c"]
    pre[pre.index("-o") + 1] = "/tmp/preprocess-share.i"
    pre.insert(1, "-E")
    t0 = time.time()
    subprocess.run(pre, cwd=e["directory"], capture_output=True, check=True)
    pre_s = time.time() - t0
    # The front end alone (parsing, mostly headers): what precompiled headers can save
    # (docs/bench/mysql-build.md).
    t0 = time.time()
    subprocess.run(args + ["-fsyntax-only"], cwd=e["directory"], capture_output=True, check=True)
    front_s = time.time() - t0
    print(f"{tu}: compile {compile_s:.1f} s, preprocess {pre_s:.2f} s, share {pre_s / compile_s * 100:.1f} %,"
          f" front end (-fsyntax-only) {front_s:.1f} s = {front_s / compile_s * 100:.0f} %")
