#!/usr/bin/env python3
"""How concentrated a GCC profile is: how many functions carry 50 / 90 / 99 % of its counts.

    tools/profile-concentration.py GCDA_DIR...

Counts are arc counters read with `gcov-dump-12 -l` (the same reader as gcda-overlap.py). Per
directory: functions in the profile, functions with any count, the functions (and their source
areas, from the .gcda file names) that carry 50, 90 and 99 % of all counts. A flatter profile
spreads the training over more code, so each function's layout decision has less to gain.
docs/bench/mysql.md ("Why MySQL gains less") quotes it for MySQL 9.7 and MariaDB 10.11.
"""
import importlib.util
import os
import sys
from collections import Counter

spec = importlib.util.spec_from_file_location(
    "gcda_overlap", os.path.join(os.path.dirname(__file__), "gcda-overlap.py"))
gcda_overlap = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gcda_overlap)


def area(gcda_name):
    # MySQL mangles paths as a#b#CMakeFiles#target.dir#file.gcda, MariaDB's as its object path.
    parts = [p for p in gcda_name.split("#") if p and p != "CMakeFiles" and not p.endswith(".dir")]
    dirs = parts[:-1] or ["."]
    return "/".join(dirs[:2]) if dirs[0] in ("storage", "plugin", "extra", "components") else dirs[0]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for d in sys.argv[1:]:
        prof = gcda_overlap.load(d)
        totals = sorted(((sum(v), k) for k, v in prof.items()), reverse=True)
        grand = sum(t for t, _ in totals) or 1
        with_counts = sum(1 for t, _ in totals if t > 0)
        print(f"{d}: {len(prof)} functions, {with_counts} with counts "
              f"({100 * with_counts / max(len(prof), 1):.1f} %), {grand} arc counts")
        for share in (0.5, 0.9, 0.99):
            acc, n, areas = 0, 0, Counter()
            for t, (name, _) in totals:
                if acc >= share * grand:
                    break
                acc += t
                n += 1
                areas[area(name)] += t
            top = ", ".join(f"{a} {100 * c / grand:.0f} %" for a, c in areas.most_common(4))
            print(f"  {int(share * 100)} % of counts in {n} functions; largest areas: {top}")


if __name__ == "__main__":
    main()
