#!/usr/bin/env python3
"""What a shorter default benchmark would cost in decision quality (issue 49 item 4), answered
from one committed sliced run: its records cut to fewer rounds, fewer slices per run (shorter
runs: the first K slices of each cell), fewer workloads or fewer contenders, and reported again
by pgoforge's own report, so each shape is judged by the same statistics a real run of that shape
would get. For each shape: the benchmark's wall time by the plan's estimate (bench/estimate.rs's
rates), the A/A control's widest interval (the run's own noise, what a smaller effect must rise
above), the headline's lower bounds (the winner against the distribution's server), the held-out
check, and the winner.

What cutting cannot show: a shorter warm-up (the run's warm-up is not in the records), and the
rounds' order (a cut run keeps the first R rounds of the original Williams design, whose balance
holds over whole blocks only).

usage: tools/bench-shape.py RUN_DIR [PGOFORGE]   (PGOFORGE: target/release/pgoforge)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

# bench/estimate.rs: per measured run beyond its seconds, per server start (copy, start, prewarm).
PER_RUN_S = 0.6
PER_START_S = 3.3 + 5.0

# Files of the run directory the report reads besides plan.json and results.jsonl.
BESIDE = [
    "environment.json",
    "source-release.json",
    "profile-reuse.json",
    "saturation.json",
    "calibration.json",
    "policy.json",
]


def estimate_s(plan, servers):
    cells = len(plan["workloads"])  # one thread count per workload (chosen or given)
    per_run = plan["warmup_seconds"] + plan["seconds"] + PER_RUN_S
    return plan["rounds"] * servers * (cells * per_run + PER_START_S)


def cut(run, out, rounds, slices, workloads=None, drop=()):
    """A run directory at OUT holding RUN cut to the shape; returns its plan."""
    plan = json.load(open(os.path.join(run, "plan.json")))
    slice_s = plan.get("slice_seconds") or plan["seconds"]
    plan["rounds"] = rounds
    plan["seconds"] = slices * slice_s
    if workloads:
        plan["workloads"] = [w for w in plan["workloads"] if w in workloads]
        if "chosen_threads" in plan:
            plan["chosen_threads"] = [
                c for c in plan["chosen_threads"] if c["workload"] in workloads
            ]
    plan["contenders"] = [c for c in plan["contenders"] if c["name"] not in drop]
    plan["reference_only"] = [n for n in plan.get("reference_only", []) if n not in drop]
    os.makedirs(out)
    json.dump(plan, open(os.path.join(out, "plan.json"), "w"))
    names = {c["name"] for c in plan["contenders"]}
    with open(os.path.join(run, "results.jsonl")) as f, open(
        os.path.join(out, "results.jsonl"), "w"
    ) as o:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            if (
                r["round"] <= rounds
                and (r.get("slice") is None or r["slice"] < slices)
                and r["workload"] in plan["workloads"]
                and r["contender"] in names
            ):
                o.write(line if line.endswith("\n") else line + "\n")
    for f in BESIDE:
        if os.path.exists(os.path.join(run, f)):
            shutil.copy(os.path.join(run, f), out)
    return plan


def pct(x):
    return f"{(x - 1) * 100:+.1f}"


def judge(pgoforge, d):
    rep = json.loads(
        subprocess.run(
            [pgoforge, "report", d, "--format", "json"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    control = rep["plan"].get("aa_control")
    # The interval the report shows (Holm-adjusted; the control's own family), or the plain one.
    shown = lambda k: k.get("ratio_ci_adjusted") or k["ratio_ci95"]
    aa = [
        shown(c["tps_vs_baseline"])
        for c in rep["cells"]
        if c["contender"] == control and c.get("tps_vs_baseline")
    ]
    aa_width = max(((hi - lo) / 2 * 100 for lo, hi in aa), default=None)
    aa_sig = any(
        c["tps_vs_baseline"]["significant"]
        for c in rep["cells"]
        if c["contender"] == control and c.get("tps_vs_baseline")
    )
    head = rep.get("headline") or {}
    lows = {
        c["workload"]: shown(c["vs_reference"])[0]
        for c in head.get("cells", [])
        if c.get("vs_reference")
    }
    held = rep.get("held_out")
    winner = (rep.get("decision") or {}).get("winner")
    return aa_width, aa_sig, lows, held, winner


def held_out(held, winner):
    """The winner's held-out cells: the lowest one-sided bound, and whether every one was shown
    not slower than the margin (report.json's `outcome`)."""
    if not held or not winner:
        return "-"
    cells = [c for c in held.get("cells", []) if c["contender"] == winner]
    if not cells:
        return "-"
    res = [c["test"]["result"] for c in cells]
    bounds = [r["bound"] for r in res if "bound" in r]
    shown = all(r.get("outcome") == "not_slower" for r in res)
    low = f" (bound {pct(min(bounds))} %)" if bounds else ""
    return ("not slower" if shown else "not shown") + low


def main():
    run = sys.argv[1]
    pgoforge = sys.argv[2] if len(sys.argv) > 2 else "target/release/pgoforge"
    plan = json.load(open(os.path.join(run, "plan.json")))
    rounds = plan["rounds"]
    slice_s = plan.get("slice_seconds") or plan["seconds"]
    slices = plan["seconds"] // slice_s
    workloads = plan["workloads"]
    others = [c["name"] for c in plan["contenders"]]
    # The exact paired test's smallest p is 2 / 2^rounds: under Holm over m comparisons, 10
    # rounds serve up to 25, 9 up to 12, 8 up to 6 — fewer rounds need fewer comparisons, so
    # the shapes with fewer rounds also drop comparisons (a contender, workloads).
    shapes = []
    for k in sorted({slices, 3, 2}, reverse=True):
        if k <= slices:
            shapes.append((rounds, k, None, ()))
    fewer = [w for w in workloads if w != "oltp_read_only"]
    three = [w for w in workloads if w in ("oltp_point_select", "oltp_read_write", "select_random_ranges")]
    if "pgo+lto" in others and "pgo+lto+bolt" in others:
        # The unBOLTed form of the bolt-ready build, measured apart: BOLT's own share is lost.
        for k in sorted({slices, 3, 2}, reverse=True):
            shapes.append((min(rounds, 9), k, None, ("pgo+lto",)))
        if fewer != workloads:
            shapes.append((min(rounds, 9), 3, fewer, ("pgo+lto",)))
            shapes.append((min(rounds, 8), 3, three, ("pgo+lto",)))
            shapes.append((min(rounds, 8), 2, three, ("pgo+lto",)))
    print(
        f"Cut from {run}: {rounds} rounds, runs of {slices} × {slice_s} s after "
        f"{plan['warmup_seconds']} s of warm-up, {len(workloads)} workloads, "
        f"{len(others)} servers.\n"
    )
    heads = None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (r, k, ws, drop) in enumerate(shapes):
            d = os.path.join(tmp, str(i))
            p = cut(run, d, r, k, ws, drop)
            aa_w, aa_sig, lows, held, winner = judge(pgoforge, d)
            if heads is None:
                heads = list(lows)
            est = estimate_s(p, len(p["contenders"]))
            held_s = held_out(held, winner)
            rows.append(
                [
                    str(r),
                    f"{k * slice_s} s",
                    "all" if not ws else " ".join(w.replace("oltp_", "") for w in ws),
                    ", ".join(drop) if drop else "-",
                    f"{est / 60:.0f} min",
                    "-" if aa_w is None else f"±{aa_w:.1f} %" + (" (sig.)" if aa_sig else ""),
                ]
                + [pct(lows[h]) if h in lows else "-" for h in heads]
                + [held_s, winner or "none"]
            )
    header = (
        ["rounds", "run", "workloads", "dropped", "bench (est.)", "A/A widest"]
        + [f"{h} lower bound" for h in heads]
        + ["held-out", "winner"]
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
