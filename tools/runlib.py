"""What the noise studies' scripts share (noise-by-host.py, steal-and-noise.py, steal-covariate.py):
reading a run directory's results.jsonl, grouping its records into cells, the coefficient of
variation, the baseline a run compares against, and the command line over run directories.
Imported by those scripts from this folder (python3 tools/NAME.py puts it on sys.path)."""

import json
import os
import statistics as st
import sys
from collections import defaultdict


def records(run_dir, keep=lambda r: True):
    """The complete records of RUN_DIR/results.jsonl that `keep` accepts."""
    with open(os.path.join(run_dir, "results.jsonl")) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    return [r for r in recs if r.get("result", {}).get("complete", True) and keep(r)]


def measured(r):
    """A record with its load recorded and a nonzero time and transaction count."""
    return (
        bool(r.get("load"))
        and r["result"].get("total_time_s", 0) > 0
        and r["result"].get("transactions", 0) > 0
    )


def cells(recs):
    """(workload, threads) -> (round, contender) -> list of records (one, or one per slice)."""
    by = defaultdict(lambda: defaultdict(list))
    for r in recs:
        by[(r["workload"], r["threads"])][(r["round"], r["contender"])].append(r)
    return by


def baseline(contenders):
    """The contender a run compares against: baseline, gcc-baseline or a, else the first."""
    contenders = sorted(contenders)
    return next((c for c in ("baseline", "gcc-baseline", "a") if c in contenders), contenders[0])


def cv(xs):
    """Coefficient of variation of the positive values (None for fewer than three)."""
    xs = [x for x in xs if x > 0]
    if len(xs) < 3:
        return None
    return st.pstdev(xs) / st.mean(xs)


def main(analyse, doc):
    """`analyse` every run directory named on the command line (the usage is `doc`)."""
    if len(sys.argv) < 2:
        sys.exit(doc)
    for d in sys.argv[1:]:
        analyse(d)
