#!/usr/bin/env python3
"""Checks the code layout rules of docs/architecture.md: no file in
engine/src, lab/src, apps/src or bench/src over 600 lines of code (lines before the
first #[cfg(test)]), and no import cycle between the modules of each crate
(edges are `use super::..`/`crate::..` paths outside comments and tests).
Every workspace member is either checked here or exempt by name, so a new
crate cannot go unchecked. Exits 1 naming what is wrong."""
import os
import re
import sys

MAX_LINES = 600
# The crates whose src/ is checked.
CRATES = ("slot-lists", "engine", "lab", "apps", "bench")
# Workspace members not checked, and why.
EXEMPT = {"dpdk-sys": "FFI bindings, generated at build time"}


def modules(root):
    """Module path -> (file, source before tests, comments stripped)."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)[:-3]
            parts = [p for p in rel.split("/") if p not in ("mod", "lib", "main")]
            if rel.startswith("bin/"):
                continue
            src = open(path, encoding="utf-8").read().split("#[cfg(test)]")[0]
            out["::".join(parts)] = (path, src)
    return out


def edges(mods):
    names = set(mods)
    result = {}
    for name, (_, src) in mods.items():
        here = name.split("::") if name else []
        code = "\n".join(l for l in src.splitlines() if not l.strip().startswith("//"))
        deps = set()
        for m in re.finditer(r"\b(super|crate)((?:::\w+)+)", code):
            # `super` is the parent of this module, whether it is a file
            # (proto/session.rs) or a folder's mod.rs (proto/mod.rs).
            base = here[:-1] if m.group(1) == "super" else []
            full = base + m.group(2).split("::")[1:]
            for k in range(len(full), 0, -1):
                cand = "::".join(full[:k])
                if cand in names and cand != name:
                    deps.add(cand)
                    break
        result[name] = deps
    return result


def cycles(graph):
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def workspace_members(top):
    """The `members` of the workspace's Cargo.toml."""
    text = open(os.path.join(top, "Cargo.toml"), encoding="utf-8").read()
    m = re.search(r"^members\s*=\s*\[([^\]]*)\]", text, re.M)
    return re.findall(r'"([^"]+)"', m.group(1)) if m else []


def main():
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = []
    for member in workspace_members(top):
        if member not in CRATES and member not in EXEMPT:
            problems.append(
                f"workspace member {member} is neither checked nor exempt"
                " (add it to CRATES or EXEMPT in scripts/check-layout.py)"
            )
    for name in CRATES:
        crate = f"{name}/src"
        root = os.path.join(top, crate)
        mods = modules(root)
        for _, (path, src) in sorted(mods.items()):
            n = src.count("\n")
            if n > MAX_LINES:
                problems.append(f"{os.path.relpath(path, top)}: {n} lines of code (limit {MAX_LINES})")
        for comp in cycles(edges(mods)):
            problems.append(f"{crate}: import cycle between {', '.join(comp)}")
    for p in problems:
        print(f"check-layout: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print("check-layout: no file over 600 lines of code, no import cycle")


if __name__ == "__main__":
    main()
