#!/usr/bin/env python3
"""Checks two promises docs/ARCHITECTURE.md makes about pgoforge's library (crates/pgoforge/src, or
the crate source directory given as the argument, e.g. crates/mysqld/src),
over the edges A -> B where file A names a path (`crate::x::y`, `super::y`) that resolves to file B:
no file imports a file that imports it back (no cycles), and no module imports one of a higher
layer (LAYERS below, the table in ARCHITECTURE.md). Prints every cycle and every upward import;
exits 1 when there is one. The test suite runs this (tests/fast/architecture.rs) over every crate:
`--cycles-only` checks a crate that has no layer table (oltp, testsupport) for cycles alone."""
import os, re, sys

args = [a for a in sys.argv[1:] if a != "--cycles-only"]
CYCLES_ONLY = "--cycles-only" in sys.argv[1:]
# The library's source; another tree (a copy, as the test makes) may be given as the argument.
ROOT = args[0] if args else os.path.join(
    os.path.dirname(__file__), "..", "crates", "pgoforge", "src")


def module_of(path):
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib"):
        rel = rel[:-1]
    return tuple(rel)


files = {}
for d, _, fs in os.walk(ROOT):
    for f in fs:
        if f.endswith(".rs") and not (d == ROOT and f == "main.rs") and "/cli" not in d + "/":
            p = os.path.join(d, f)
            files[module_of(p)] = p


def resolve(mod, parts):
    """The longest prefix of parts (absolute module path) that is a file."""
    for n in range(len(parts), 0, -1):
        if tuple(parts[:n]) in files:
            return tuple(parts[:n])
    return None


edges = {m: set() for m in files}
for m, p in files.items():
    text = open(p).read()
    text = text.split("#[cfg(test)]")[0]
    # Comments (doc links included) name modules without importing them.
    text = re.sub(r"//.*", "", text)
    is_mod_file = p.endswith("mod.rs") or p.endswith("lib.rs")
    for mt in re.finditer(r"\b(crate|super)((?:::\w+)+)", text):
        parts = mt.group(2).strip(":").split("::")
        if mt.group(1) == "crate":
            base = []
        else:
            base = list(m[:-1])
        target = resolve(m, base + parts)
        # a module file naming its own children is a declaration, not an import
        if target and target != m and not (is_mod_file and target[: len(m)] == m):
            edges[m].add(target)

# ARCHITECTURE.md's layers, top (cli) to bottom (infra): a module may import its own layer's
# modules and any below, never one above. `server` and `infra` live in crates/mysqld (checked with
# that crate's src as the argument); Cargo keeps them from importing pgoforge at all.
LAYERS = {
    "cli": 6,
    "pipeline": 5, "follow": 5,
    "bench": 4, "profile": 4, "gate": 4, "package": 4, "repository": 4,
    "builder": 3, "server": 3, "source": 3,
    "toolchain": 2, "recipe": 2, "events": 2,
    "infra": 1,
}


def layer(m):
    return LAYERS.get(m[0]) if m else None


upward = []
for m, targets in edges.items():
    for t in targets:
        lm, lt = layer(m), layer(t)
        if lm is None or lt is None:
            continue
        if lt > lm:
            upward.append(f"upward import: {'/'.join(m)} (layer {m[0]}) uses {'/'.join(t)} (layer {t[0]}, above it)")
if CYCLES_ONLY:
    upward = []
unknown = [] if CYCLES_ONLY else sorted({m[0] for m in files if m and m[0] not in LAYERS})
for u in unknown:
    upward.append(f"module {u} has no layer: add it to LAYERS here and to docs/ARCHITECTURE.md")

cycles = set()


def dfs(node, stack, seen):
    for n in edges[node]:
        if n in stack:
            cyc = stack[stack.index(n):]
            k = min(range(len(cyc)), key=lambda i: cyc[i])
            cycles.add(tuple(cyc[k:] + cyc[:k]))
        elif n not in seen:
            seen.add(n)
            dfs(n, stack + [n], seen)


for m in files:
    dfs(m, [m], {m})
for c in sorted(cycles):
    print(" -> ".join("/".join(x) or "lib" for x in c + (c[0],)))
for u in sorted(upward):
    print(u)
sys.exit(1 if cycles or upward else 0)
