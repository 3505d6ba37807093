#!/usr/bin/env python3
"""Whether two builds compiled the same code, function by function: objdump -d of each binary,
every function's instructions hashed with addresses and other numbers of 4+ hex digits (call and
jump targets, rip-relative displacements: they move when the layout does) and comments left out,
symbol names and offsets inside a function kept; PLT stubs left out (their slot numbers follow
the order of imports); ThinLTO's .llvm.N suffixes of promoted local symbols set aside. Prints
how many functions are in both, identical, differing, in one only (docs/bench/mysql-build.md and
docs/bench/mariadb-pch.md: a build with precompiled headers against one without).

usage: compare-functions.py BINARY_A BINARY_B"""
import hashlib, re, subprocess, sys
def fns(path):
    p = subprocess.Popen(["objdump", "-d", "--no-show-raw-insn", path], stdout=subprocess.PIPE, text=True, bufsize=1 << 20)
    out = {}; name = None; h = None
    hexaddr = re.compile(r"\b(0x)?[0-9a-f]{4,}\b")
    for line in p.stdout:
        if line.endswith(">:\n") and not line.startswith(" "):
            if name: out[name] = h.hexdigest()
            name = line[line.index("<") + 1:-3]; h = hashlib.sha1(); continue
        if name is None or "\t" not in line: continue
        ins = line.split("\t", 1)[1]
        ins = ins.split("#")[0] if "#" in ins else ins
        ins = hexaddr.sub("A", ins)
        h.update(ins.encode())
    if name: out[name] = h.hexdigest()
    p.wait(); return out
if len(sys.argv) != 3:
    sys.exit(__doc__)
def by_name(f):
    # ThinLTO renames a promoted local symbol NAME.llvm.N, N a hash of its module, which changes
    # whenever anything in the module does (a precompiled header, say): compared by NAME, with
    # the hashes of every function of that name.
    out = {}
    for k, v in f.items():
        out.setdefault(re.sub(r"\.llvm\.\d+$", "", k), []).append(v)
    return {k: "".join(sorted(v)) for k, v in out.items()}
a, b = by_name(fns(sys.argv[1])), by_name(fns(sys.argv[2]))
# PLT stubs carry their slot number: they differ whenever the order of imports does.
a = {k: v for k, v in a.items() if not k.endswith("@plt")}
b = {k: v for k, v in b.items() if not k.endswith("@plt")}
both = set(a) & set(b)
same = sum(1 for k in both if a[k] == b[k])
diff = sorted(k for k in both if a[k] != b[k])
print(f"functions (PLT stubs left out): {len(a)} / {len(b)}; in both {len(both)}; identical {same}; differing {len(diff)}; only first {len(set(a)-set(b))}; only second {len(set(b)-set(a))}")
# Static initializers (_GLOBAL__sub_I_<unit>) run once at start-up: a unit that now reads more
# headers may construct more of their namespace-scope objects. Anything else is the code proper.
init = [k for k in diff if k.startswith("_GLOBAL__sub_I_")]
other = [k for k in diff if not k.startswith("_GLOBAL__sub_I_")]
print(f"differing: {len(init)} static initializers, {len(other)} other functions")
for k in other[:40]: print("  differs:", k)
for side, names in (("first", set(a) - set(b)), ("second", set(b) - set(a))):
    inits = sum(1 for k in names if k.startswith("_GLOBAL__sub_I_"))
    print(f"only in the {side}: {inits} static initializers, {len(names) - inits} other")
    for k in sorted(k for k in names if not k.startswith("_GLOBAL__sub_I_"))[:20]:
        print(f"  {side} only:", k)
