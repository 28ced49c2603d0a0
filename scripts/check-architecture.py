#!/usr/bin/env python3
"""The layout rules of issue 9, checked on every `make lint`:

- no source file over 600 lines (a file that long usually does more than one job);
- no import cycle between the modules of a crate (a module never imports from a module that
  imports it back, directly or through others), which also rules out hub `mod.rs` files whose
  children import from them.

Imports are read from `use` lines (crate::, super::, self:: and child-relative paths) outside
`#[cfg(test)]` code, and resolved to the longest module path that exists. Exit 1 with one line per
violation, naming the file or the cycle.
"""
import os
import re
import sys

MAX_LINES = 600
CRATES = ["remoting", "remoting-server", "broker-under-test", "harness", "floor", "name-server"]


def modules(src):
    """Module path (tuple) -> file, for every .rs file under src (binaries excluded)."""
    found = {}
    for dirpath, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            parts = os.path.relpath(path, src)[:-3].split(os.sep)
            if "bin" in parts:
                continue
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            found[tuple(parts)] = path
    return found


def split_top(text):
    """Splits `a, b::{c, d}, e` at top-level commas."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return parts


def leaf_paths(prefix, tree):
    """Expands a use tree into full paths."""
    if tree.startswith("{") and tree.endswith("}"):
        for part in split_top(tree[1:-1]):
            yield from leaf_paths(prefix, part)
        return
    brace = tree.find("::{")
    if brace >= 0:
        yield from leaf_paths(prefix + tree[:brace].split("::"), tree[brace + 2 :])
        return
    yield prefix + [s for s in tree.split("::") if s not in ("self", "*", "")]


def imports(module, text, mods):
    text = text.split("#[cfg(test)]")[0]
    for use in re.findall(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?use\s+([^;]+);", text, re.M):
        use = re.sub(r"\s+", "", use)
        use = re.sub(r"\bas\w+", "", use)
        if use.startswith("crate::"):
            base, rest = [], use[len("crate::") :]
        elif use.startswith("super::"):
            base, rest = list(module[:-1]), use[len("super::") :]
            while rest.startswith("super::"):
                base, rest = base[:-1], rest[len("super::") :]
        elif use.startswith("self::"):
            base, rest = list(module), use[len("self::") :]
        else:
            first = re.split(r"::|\{", use)[0]
            if tuple(list(module) + [first]) not in mods:
                continue  # an external crate
            base, rest = list(module), use
        for path in leaf_paths(base, rest):
            for i in range(len(path), -1, -1):
                target = tuple(path[:i])
                if target in mods:
                    if target != module:
                        yield target
                    break


def cycles(graph, nodes):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main(root):
    problems = []
    for crate in CRATES:
        src = os.path.join(root, crate, "src")
        if not os.path.isdir(src):
            continue
        mods = modules(src)
        graph = {}
        for module, path in mods.items():
            with open(path, encoding="utf-8") as f:
                text = f.read()
            lines = text.count("\n")
            if lines > MAX_LINES:
                problems.append(f"{os.path.relpath(path, root)}: {lines} lines (limit {MAX_LINES}): split it along its jobs")
            graph[module] = set(imports(module, text, mods))
        for comp in cycles(graph, sorted(mods)):
            names = " <-> ".join("::".join(m) or "crate root" for m in comp)
            problems.append(f"{crate}: import cycle {names}: move the shared items to a leaf module")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"architecture: {len(CRATES)} crates, no file over {MAX_LINES} lines, no import cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
