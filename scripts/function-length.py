#!/usr/bin/env python3
"""Lists every function of the non-test Rust code under crates/ (or the directory given) longer
than the limit (120 lines, from its `fn` line to its closing brace), longest first; exits 1 when
there is one. Test code (tests/, examples/, benches/, `#[cfg(test)]` modules at the end of a file)
is left out. Reads rustfmt-formatted code: a function ends at the first `}` at its own indent.
The fast tier runs this (tests/fast/architecture.rs)."""
import os
import re
import sys

LIMIT = 120
ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "crates")
FN = re.compile(r"^(\s*)(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?(unsafe\s+)?fn\s+(\w+)")

long = []
for d, _, fs in os.walk(ROOT):
    parts = d.split(os.sep)
    if any(p in ("tests", "examples", "benches", "target") for p in parts):
        continue
    for f in fs:
        if not f.endswith(".rs"):
            continue
        path = os.path.join(d, f)
        with open(path) as fh:
            lines = fh.read().split("\n")
        for i, l in enumerate(lines):
            if l.startswith("#[cfg(test)]"):
                lines = lines[:i]
                break
        i = 0
        while i < len(lines):
            m = FN.match(lines[i])
            if not m:
                i += 1
                continue
            indent = len(m.group(1))
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
                j += 1
            if j >= len(lines) or lines[j].rstrip().endswith(";"):
                i = j + 1
                continue
            k = j + 1
            while k < len(lines) and not (
                lines[k].startswith(" " * indent + "}") and len(lines[k]) - len(lines[k].lstrip()) == indent
            ):
                k += 1
            n = k - i + 1
            if n > LIMIT:
                long.append((n, os.path.relpath(path, ROOT), m.group(7), i + 1))
            i = k + 1

for n, path, name, line in sorted(long, reverse=True):
    print(f"{path}:{line}: fn {name} is {n} lines (at most {LIMIT})")
sys.exit(1 if long else 0)
