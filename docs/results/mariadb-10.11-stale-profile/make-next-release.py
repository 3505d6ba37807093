#!/usr/bin/env python3
"""Make a model of MariaDB's next release from the one pgoforge trained on.

Only one release's source is fetchable here (10.11.18), but the next one's
*binary* is (Debian's 10.11.19 mariadbd, installed on this machine). The
functions whose exported symbols changed size between Debian's two builds (same
compiler, same flags, same distribution) are where the release changed code —
or where code inlined into them changed. This script gives each of those
functions, in a copy of the 10.11.18 source, an edit shaped like a security
fix: one added check at the top of the body (a new branch, so both compilers see
a new control-flow graph and drop the function's old counts, as they would for
a real fix). Everything else stays as trained.

It is a model, not the release: functions inside InnoDB and static functions
are not exported, so their changes are not seen here (fewer edits than the
release made); a function that changed only through an inlined callee is edited
anyway (more). The report of the run built from this tree states the share of
the profile the compiler found stale, which is what matters for the cost.

Usage: make-next-release.py OLD_MARIADBD NEW_MARIADBD SOURCE_DIR
Edits SOURCE_DIR in place (give it a copy), prints a JSON summary on stdout.
"""
import json
import os
import re
import subprocess
import sys

EDIT = (" { static volatile int pgoforge_next_release_check;"
        " if (pgoforge_next_release_check) pgoforge_next_release_check= 0; }")
DIRS = ["sql", "mysys", "strings", "sql-common", "vio", "storage/innobase",
        "storage/maria", "storage/myisam", "storage/perfschema", "wsrep-lib/src",
        "plugin", "tpool", "libmysqld"]
SKIP_DIRS = ("/unittest", "/test", "/examples", "libmysqld")


def exported_functions(binary):
    out = subprocess.run(["nm", "-D", "--defined-only", "-S", binary],
                         check=True, capture_output=True, text=True).stdout
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in ("T", "t", "W", "w"):
            sizes[parts[3]] = parts[1]
    return sizes


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), check=True,
                         capture_output=True, text=True).stdout
    return out.splitlines()


def qualified_name(demangled):
    """`ns::Class::method(args) const` -> `ns::Class::method`, None when odd."""
    depth = 0
    for i, ch in enumerate(demangled):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            name = demangled[:i]
            if "<" in name or "operator" in name or " " in name:
                return None
            return name
    return demangled if re.fullmatch(r"[\w:~]+", demangled) else None


def sources(root):
    for d in DIRS:
        top = os.path.join(root, d)
        for dirpath, _, files in os.walk(top):
            if any(s in dirpath[len(root):] for s in SKIP_DIRS):
                continue
            for f in files:
                if f.endswith((".cc", ".c", ".cpp")):
                    yield os.path.join(dirpath, f)


def body_start(text, pos):
    """pos: just after the name; returns the index of the body's `{` or None."""
    i = text.index("(", pos)
    depth = 0
    while i < len(text):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                break
        i += 1
    i += 1
    # Trailing qualifiers, then a body, a constructor's initializer list, or `;`.
    m = re.compile(r"\s*(?:const|noexcept|override|final|throw\(\))?\s*").match(text, i)
    i = m.end()
    if i >= len(text):
        return None
    if text[i] == "{":
        return i
    if text[i] != ":" or text.startswith("::", i):
        return None
    depth = 0
    j = i + 1
    while j < len(text):
        c = text[j]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "{" and depth == 0:
            k = j - 1
            while k > i and text[k].isspace():
                k -= 1
            if text[k] in ")}":
                return j
            # a member's brace initializer: skip it
            depth2 = 0
            while j < len(text):
                if text[j] == "{":
                    depth2 += 1
                elif text[j] == "}":
                    depth2 -= 1
                    if depth2 == 0:
                        break
                j += 1
        elif c == ";":
            return None
        j += 1
    return None


def find_definitions(files_text, name):
    parts = name.split("::")
    pattern = r"(?m)(?:^|[\s\*&])" + r"\s*::\s*".join(re.escape(p) for p in parts) + r"\s*\("
    # An unqualified name must begin a line or follow a return type on its line.
    if len(parts) == 1:
        pattern = r"(?m)^(?:[\w\*&<>:, \t]*[ \t\*&])?" + re.escape(name) + r"\s*\("
    rx = re.compile(pattern)
    found = []
    for path, text in files_text.items():
        if parts[-1] not in text:
            continue
        for m in rx.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            line = text[line_start:m.start()]
            if line.lstrip().startswith(("#", "//", "*", "return", "if", "else")):
                continue
            b = body_start(text, m.end() - 1)
            if b is not None:
                found.append((path, b))
    return found


def main():
    old, new, root = sys.argv[1:4]
    a, b = exported_functions(old), exported_functions(new)
    changed = sorted(n for n in a.keys() & b.keys() if a[n] != b[n])
    files_text = {}
    for p in sources(root):
        with open(p, encoding="utf-8", errors="surrogateescape") as f:
            files_text[p] = f.read()
    edits = {}
    placed, unplaced = [], []
    for mangled, dem in zip(changed, demangle(changed)):
        name = qualified_name(dem)
        defs = find_definitions(files_text, name) if name else []
        # Overloads share a name: the edit goes to every definition found,
        # which over-counts a little rather than missing the changed one.
        if not defs:
            unplaced.append(dem)
            continue
        placed.append(dem)
        for path, pos in defs:
            edits.setdefault(path, set()).add(pos)
    for path, positions in edits.items():
        text = files_text[path]
        for pos in sorted(positions, reverse=True):
            text = text[:pos + 1] + EDIT + text[pos + 1:]
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
    print(json.dumps({
        "exported_functions_old": len(a),
        "exported_functions_new": len(b),
        "changed_size": len(changed),
        "only_old": len(a.keys() - b.keys()),
        "only_new": len(b.keys() - a.keys()),
        "edited_functions": len(placed),
        "edited_definitions": sum(len(p) for p in edits.values()),
        "edited_files": sorted(os.path.relpath(p, root) for p in edits),
        "not_found": unplaced,
    }, indent=1))


if __name__ == "__main__":
    main()
