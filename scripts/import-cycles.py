#!/usr/bin/env python3
"""Lists import cycles between the files of pgoforge's library (crates/pgoforge/src): an edge A -> B
when A names a path (`crate::x::y`, `super::y`) that resolves to file B. Exits 1 when a cycle exists.
docs/ARCHITECTURE.md promises there are none; the test suite runs this."""
import os, re, sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "crates", "pgoforge", "src")


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
sys.exit(1 if cycles else 0)
