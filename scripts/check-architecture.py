#!/usr/bin/env python3
"""The layout rules of issues 9 and 44, checked on every `make lint`:

- no source file over 600 lines (a file that long usually does more than one job);
- no import cycle between the modules of a crate (a module never imports from a module that
  imports it back, directly or through others), which also rules out hub `mod.rs` files whose
  children import from them;
- the workspace's crates form layers (LAYERS, lowest first): a crate's [dependencies] name only
  workspace crates of a lower layer, and the offline crates stay offline (FORBIDDEN);
- inside a crate, a top-level module listed in MODULE_RULES imports none of the modules listed
  for it (the harness's models below its runner and job parts).

The crates are the workspace `Cargo.toml`'s `members`. A module's imports are every path into the
crate outside `#[cfg(test)]` code: `use` and `pub use` lines, and inline paths (`crate::a::f(..)`,
`super::x::Y`, `self::y::Z`, `child::g()`) in expressions, types, `impl ... for`, attributes and
macro calls. Comments and string literals are blanked first. Each path resolves to the longest
module path that exists; a parent's `pub use child::X` is an edge parent -> child, so a child that
imports through its parent (`crate::parent::X`) closes a cycle. Declaring `mod child;` is not an
import. Exit 1 with one line per violation, naming the file, the crate or the cycle (with the
import that makes each step of it).
"""
import os
import re
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

MAX_LINES = 600

# Lowest first: a crate may depend only on workspace crates of a lower row.
LAYERS = [
    ["remoting"],
    ["remoting-server", "harness-model"],
    ["harness-results", "rmq-client"],
    ["harness-analysis", "name-server", "floor", "broker-under-test"],
    ["harness"],
]

# Direct [dependencies] a crate must not have: the offline crates are usable without a runtime or
# the wire format: harness-model (profiles, matrices, rules), harness-results (the result-folder
# contract) and harness-analysis (compare, gate, drift, the HTML report), which also never reach
# back up into the runner.
OFFLINE = ["tokio", "remoting", "rmq-client", "harness"]
FORBIDDEN = {"harness-model": OFFLINE, "harness-results": OFFLINE, "harness-analysis": OFFLINE}

# Inside one crate (by package name): top-level module -> top-level modules it must never import.
# In the harness, the consumer model, the order model, the recorder and result writing sit below
# the runner and the job parts (`cluster`, `fault`, `ha`, `order`; `consumer` is a part too, but
# its model is what the rule is about: its own `job_part.rs` plugs in through `part`); what two of
# them share moves down (`send_order` holds what the consumers and the order part both use).
JOB_PARTS_AND_RUNNER = ["runner", "kind", "cluster", "fault", "ha", "order"]
MODULE_RULES = {
    "harness": {
        "consumer": JOB_PARTS_AND_RUNNER,
        "send_order": JOB_PARTS_AND_RUNNER + ["consumer"],
        "recorder": JOB_PARTS_AND_RUNNER + ["consumer", "report"],
        "report": JOB_PARTS_AND_RUNNER + ["consumer"],
    },
}

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_STRING = re.compile(r"\$?" + IDENT + r"(?:::" + IDENT + r")+")


# ---------------------------------------------------------------------------------------------
# Manifests


def read_toml(path):
    with open(path, "rb") as f:
        data = f.read()
    if tomllib is not None:
        return tomllib.loads(data.decode("utf-8"))
    raise SystemExit("check-architecture: needs Python 3.11+ (tomllib)")


def workspace_members(root):
    return list(read_toml(os.path.join(root, "Cargo.toml"))["workspace"]["members"])


def crate_dependencies(root, member):
    """Package names of a member's normal dependencies ([dependencies] and
    [target.'...'.dependencies]); a renamed dependency counts by its `package`."""
    manifest = read_toml(os.path.join(root, member, "Cargo.toml"))
    tables = [manifest.get("dependencies", {})]
    for target in manifest.get("target", {}).values():
        tables.append(target.get("dependencies", {}))
    names = set()
    for table in tables:
        for key, value in table.items():
            if isinstance(value, dict) and "package" in value:
                names.add(value["package"])
            else:
                names.add(key)
    return names


def package_name(root, member):
    manifest = read_toml(os.path.join(root, member, "Cargo.toml"))
    return manifest.get("package", {}).get("name", os.path.basename(member))


def check_layers(root, members, layers=LAYERS, forbidden=FORBIDDEN):
    """Problems with the crate graph: members missing from `layers`, dependencies that do not
    point down, forbidden dependencies."""
    problems = []
    level = {name: i for i, row in enumerate(layers) for name in row}
    names = {m: package_name(root, m) for m in members}
    workspace = set(names.values())
    for stale in sorted(set(level) - workspace):
        problems.append(f"LAYERS names {stale}, which is not a workspace member: drop it")
    for member in members:
        name = names[member]
        if name not in level:
            problems.append(f"{name}: not in LAYERS (scripts/check-architecture.py): give it a layer")
            continue
        deps = crate_dependencies(root, member)
        for dep in sorted(deps & workspace):
            if dep in level and level[dep] >= level[name]:
                problems.append(
                    f"{name}: depends on {dep}, which is not below it "
                    f"(layer {level[dep]} >= {level[name]}): move the shared piece down"
                )
        for dep in forbidden.get(name, []):
            if dep in deps:
                problems.append(f"{name}: depends on {dep}: it is an offline crate, keep {dep} out of it")
    return problems


def layers_text(layers):
    return " < ".join(", ".join(row) for row in layers)


# ---------------------------------------------------------------------------------------------
# Source text


def blank_comments_and_strings(text):
    """The text with comments and the contents of string and char literals replaced by spaces
    (newlines kept, so offsets and line numbers stay those of the file)."""
    out = list(text)
    n, i = len(text), 0

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            # `#[serde(with = "lenient::int")]` names a module's function: kept, it is an import.
            attr = re.search(r"\b\w+\s*=\s*$", text[max(0, i - 40) : i])
            if not (attr and PATH_STRING.fullmatch(text, i + 1, j)):
                blank(i + 1, j)
            i = j + 1
        elif c == "'":
            if i + 1 < n and text[i + 1] == "\\":
                j = i + 1
                while j < n and text[j] != "'":
                    j += 2 if text[j] == "\\" else 1
                blank(i + 1, j)
                i = j + 1
            elif i + 2 < n and text[i + 2] == "'":
                blank(i + 1, i + 2)
                i += 3
            else:
                i += 1  # a lifetime or a label
        elif c.isalnum() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            raw = re.compile(r'(#*)"').match(text, j) if word in ("r", "br") else None
            if raw:  # r"..", r#".."#, br".."
                close = '"' + raw.group(1)
                k = text.find(close, raw.end())
                k = n if k < 0 else k
                blank(raw.end(), k)
                i = k + len(close)
            else:
                i = j  # b"..", b'..' go on at the quote
        else:
            i += 1
    return "".join(out)


def matching(code, open_at):
    """Index just past the bracket that closes the one at `open_at`."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack, i = [], open_at
    while i < len(code):
        c = code[i]
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if stack and stack[-1] == c:
                stack.pop()
            if not stack:
                return i + 1
        i += 1
    return len(code)


ITEM_KEYWORDS = {"pub", "use", "mod", "fn", "impl", "struct", "enum", "trait", "const", "static", "type",
                 "unsafe", "async", "extern", "macro_rules", "union"}  # fmt: skip
CFG = re.compile(r"#\s*\[\s*cfg\s*\((.*?)\)\s*\]", re.S)


def test_only(predicate):
    p = re.sub(r"\s+", "", predicate)
    if p == "test":
        return True
    if p.startswith("all(") and p.endswith(")"):
        return "test" in split_top(p[4:-1])
    return False


def item_end(code, start):
    """End of the item, field, statement or arm that starts at `start` (after its attributes)."""
    i = start
    while True:  # further attributes
        m = re.compile(r"\s*#\s*\[").match(code, i)
        if not m:
            break
        i = matching(code, m.end() - 1)
    m = re.compile(r"\s*(" + IDENT + ")").match(code, i)
    is_item = bool(m) and m.group(1) in ITEM_KEYWORDS
    depth = 0
    while i < len(code):
        c = code[i]
        if c == "{" and depth == 0 and is_item:
            return matching(code, i)
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i  # the end of the enclosing block: a field or the last arm
            depth -= 1
        elif c == ";" and depth == 0:
            return i + 1
        elif c == "," and depth == 0 and not is_item:
            return i + 1
        i += 1
    return len(code)


def blank_span(code, a, b):
    return code[:a] + re.sub(r"[^\n]", " ", code[a:b]) + code[b:]


def drop_test_code(code):
    """The code with every `#[cfg(test)]` item blanked, and the names of `#[cfg(test)] mod x;`
    children (their files are test code too)."""
    test_children = set()
    pos = 0
    while True:
        m = CFG.search(code, pos)
        if not m:
            return code, test_children
        if not test_only(m.group(1)):
            pos = m.end()
            continue
        end = item_end(code, m.end())
        decl = re.compile(r"\s*(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;").match(code, m.end())
        if decl:
            test_children.add(decl.group(1))
        code = blank_span(code, m.start(), end)
        pos = m.start()


# ---------------------------------------------------------------------------------------------
# Modules and imports


def modules(src):
    """Module path (tuple) -> file, for every .rs file under src that belongs to the library (or
    the binary when there is no lib.rs); `src/bin/` and a main.rs beside a lib.rs are other crates
    (they reach the library by its name, not by `crate::`)."""
    found = {}
    has_lib = os.path.exists(os.path.join(src, "lib.rs"))
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            parts = os.path.relpath(path, src)[:-3].split(os.sep)
            if parts[0] == "bin" or (parts == ["main"] and has_lib):
                continue
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            found[tuple(parts)] = path
    return found


def split_top(text):
    """Splits `a, b::{c, d}, e` at top-level commas."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{(":
            depth += 1
        elif ch in "})":
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
    """Expands a use tree (whitespace removed, `x as y` written `x@y`) into (path, name bound,
    glob) triples."""
    if tree.startswith("{") and tree.endswith("}"):
        for part in split_top(tree[1:-1]):
            yield from leaf_paths(prefix, part)
        return
    brace = tree.find("::{")
    if brace >= 0:
        yield from leaf_paths(prefix + tree[:brace].split("::"), tree[brace + 2 :])
        return
    alias = None
    if "@" in tree:
        tree, alias = tree.split("@", 1)
    segs = tree.split("::")
    glob = segs[-1] == "*"
    path = prefix + [s for s in segs if s not in ("*", "")]
    if len(path) > 1 and path[-1] == "self":  # `a::{self, ..}` binds `a`
        path = path[:-1]
    yield path, None if glob else (alias or path[-1]), glob


def anchor(module, segs, children, aliases):
    """(base module, rest of the path) for a path written in `module`, or None for a path that
    does not lead into the crate (an external crate, a local name)."""
    first = segs[0]
    if first in ("crate", "$crate"):
        return [], segs[1:]
    if first == "super":
        base = list(module)
        while segs and segs[0] == "super":
            if not base:
                return None
            base, segs = base[:-1], segs[1:]
        return base, segs
    if first == "self":
        return list(module), segs[1:]
    if tuple(list(module) + [first]) in children:
        return list(module), segs  # a child module
    if first in aliases:
        return list(aliases[first]), segs[1:]  # a module brought in by a `use`
    return None


class Crate:
    """The modules of one crate's src/ and their imports."""

    def __init__(self, src):
        self.files = modules(src)
        self.owner = {m: m for m in self.files}  # module (file or inline) -> the file module
        self.code = {}
        test_mods = set()
        for module, path in sorted(self.files.items()):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            code, children = drop_test_code(blank_comments_and_strings(text))
            test_mods |= {module + (c,) for c in children}
            self.code[module] = code
        # A `#[cfg(test)] mod x;` file and everything under it is test code.
        for module in list(self.files):
            if any(module[: len(t)] == t for t in test_mods):
                del self.files[module], self.owner[module], self.code[module]
        self.scopes = []  # (module path, file module, code of that scope)
        for module in sorted(self.files):
            self._scopes(module, module, self.code[module])

    def _scopes(self, module, file_module, code):
        """Splits inline `mod x { .. }` blocks off into scopes of their own (`super::` inside one
        means the file's module)."""
        pos = 0
        while True:
            m = re.compile(r"\bmod\s+(" + IDENT + r")\s*\{").search(code, pos)
            if not m:
                break
            end = matching(code, m.end() - 1)
            inner = module + (m.group(1),)
            self.owner[inner] = file_module
            body = re.sub(r"[^\n]", " ", code[: m.end()]) + code[m.end() : end - 1]
            code = blank_span(code, m.start(), end)
            self._scopes(inner, file_module, body)
            pos = m.start()
        self.scopes.append((module, file_module, code))

    def resolve(self, path):
        """The file module that the longest existing module prefix of `path` lives in."""
        for i in range(len(path), -1, -1):
            target = tuple(path[:i])
            if target in self.owner:
                return self.owner[target]
        return None

    def edges(self):
        """(from file module, to file module, line, the path as written) for every import;
        imports within one file are left out."""
        for module, file_module, code in self.scopes:
            for start, written, full in self._paths(module, code):
                target = self.resolve(full)
                if target is None or target == file_module:
                    continue
                line = code.count("\n", 0, start) + 1
                yield file_module, target, line, written

    def _paths(self, module, code):
        """(offset, path as written, full path from the crate root) of every import into the
        crate. A `use` that names a module (`use crate::runner;`) only binds the name: the
        import is where that name is used (`runner::x::f()`)."""
        code = re.sub(r"\bpub\s*\(\s*in\s+[^)]*\)", lambda m: " " * len(m.group(0)), code)
        use = re.compile(r"\buse\s+([^;]+);")
        known, aliases, found = set(self.owner), {}, []
        for m in use.finditer(code):
            tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+", "@", m.group(1)))
            if tree.startswith("::"):
                continue  # `use ::name`: an external crate
            for path, bound, glob in leaf_paths([], tree):
                start = anchor(module, path, known, {})
                if start is None:
                    continue
                full = start[0] + start[1]
                if not glob and tuple(full) in known and bound not in ("_", None):
                    aliases[bound] = tuple(full)
                    # The name may also be a function or macro of the parent (`dispatch::answer`
                    # is a module and the function it re-exports): a call imports the parent.
                    if full and re.search(r"(?<![\w:.$])(?<!fn )(?<!#\[)" + bound + r"\s*[(!]", code):
                        found.append((m.start(), "::".join(path), full[:-1]))
                else:
                    found.append((m.start(), "::".join(path), full))
        code = use.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), code)
        inline = re.compile(r"(?<![\w:$])(\$?" + IDENT + r")((?:\s*::\s*" + IDENT + r")+)")
        for m in inline.finditer(code):
            written = re.sub(r"\s+", "", m.group(0))
            start = anchor(module, written.split("::"), known, aliases)
            if start is not None:
                found.append((m.start(), written, start[0] + start[1]))
        return found


def cycles(graph, nodes):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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


def shortest_cycle(graph, comp):
    """One shortest cycle through the component's first module, as a list of modules."""
    inside, start = set(comp), comp[0]
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w not in inside:
                    continue
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return [start] + path[::-1][1:] + [start] if len(path) > 1 else [start, v, start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def name(module):
    return "::".join(module) or "crate root"


def check_crate(root, crate_dir, label, rules=None):
    """(problems, number of files, number of cycles) for one crate; `rules` is its MODULE_RULES
    entry (top-level module -> top-level modules it must never import)."""
    problems = []
    src = os.path.join(root, crate_dir, "src")
    if not os.path.isdir(src):
        return problems, 0, 0
    crate = Crate(src)
    for module, path in sorted(crate.files.items()):
        with open(path, encoding="utf-8") as f:
            lines = f.read().count("\n")
        if lines > MAX_LINES:
            problems.append(f"{os.path.relpath(path, root)}: {lines} lines (limit {MAX_LINES}): split it along its jobs")
    graph, evidence = {m: set() for m in crate.files}, {}
    for a, b, line, written in crate.edges():
        graph[a].add(b)
        evidence.setdefault((a, b), (line, written))
        if a and b and b[0] in (rules or {}).get(a[0], ()):
            problems.append(
                f"{label}: {os.path.relpath(crate.files[a], root)}:{line} {written}: {a[0]} must never "
                f"import {b[0]} (MODULE_RULES): move the shared piece below both"
            )
    found = cycles(graph, sorted(crate.files))
    for comp in found:
        steps = shortest_cycle(graph, comp)
        how = "; ".join(
            f"{os.path.relpath(crate.files[a], root)}:{evidence[(a, b)][0]} {evidence[(a, b)][1]}"
            for a, b in zip(steps, steps[1:])
        )
        names = " -> ".join(name(m) for m in steps)
        rest = sorted(set(comp) - set(steps))
        also = f" (with {', '.join(name(m) for m in rest)})" if rest else ""
        problems.append(f"{label}: import cycle {names}{also} [{how}]: move the shared items to a leaf module")
    return problems, len(crate.files), len(found)


def check(root, layers=LAYERS, forbidden=FORBIDDEN, module_rules=MODULE_RULES):
    """(problems, summary line)."""
    members = workspace_members(root)
    problems = check_layers(root, members, layers, forbidden)
    files = 0
    for member in members:
        label = package_name(root, member)
        p, n, _ = check_crate(root, member, label, module_rules.get(label))
        problems += p
        files += n
    summary = (
        f"architecture: {len(members)} crates, layers hold ({layers_text(layers)}), "
        f"module rules hold ({sum(len(r) for r in module_rules.values())} modules), {files} files, "
        f"no file over {MAX_LINES} lines, no cycle"
    )
    return problems, summary


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    problems, summary = check(root)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
