#!/usr/bin/env python3
"""The import graph among one crate's modules, and its cycles.

    scripts/module_graph.py crates/paste-api            edges, then cycles
    scripts/module_graph.py --check crates/paste-api    only the checks; exit 1 if any fails

Besides cycles, a crate may have levels, written in ARCHITECTURE.md as a
fenced block headed `levels <crate dir>`: lines `N: pattern …` (a
module name, or one ending in `*` for a module and everything below it;
the longest pattern that matches a module gives its level), and one line
`families: a b …`. A module may import only modules of its own level or
below, and no module of one family (`a`, `a::…`) may import another
family's. Every module must have a level.

A module is a file (`lib.rs` is the root, `a.rs` and `a/mod.rs` are `a`,
`a/b.rs` is `a::b`). An edge `a -> b` means a file of `a` names an item of
`b`: in a `use` (`crate::`, `super::`, `self::` or a child module's name)
or in a path in the code (`crate::b::f()`). Names the root re-exports
(`pub use b::X` in lib.rs) count as edges to the module they come from.
`mod` declarations are not edges, nor is anything under `#[cfg(test)]`
(tests may reach anywhere). Comments and string literals are ignored.
"""

import re
import sys
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments_and_strings(text):
    """`text` with comments, string and char literals blanked out."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not re.match(r"[A-Za-z0-9_]", text[i - 1])):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + len(hashes) + 2)
            i = n if end < 0 else end + 1 + len(hashes)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4] if text[i + 1:i + 2] != "\\" else text[i:i + 12]):
            m = re.match(r"'(\\[^']*|[^\\'])'", text[i:])
            i += len(m.group(0)) if m else 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_test_items(text):
    """`text` without items under `#[cfg(test)]` (a block or one item)."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]", text)
        if not m:
            return text
        j = m.end()
        brace = text.find("{", j)
        semi = text.find(";", j)
        if semi >= 0 and (brace < 0 or semi < brace):
            text = text[:m.start()] + text[semi + 1:]
            continue
        depth, k = 0, brace
        while k < len(text):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        text = text[:m.start()] + text[k + 1:]


def expand_use(tree):
    """The paths of a `use` tree: `a::{b, c::{d, e}}` -> a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [re.sub(r"as" + IDENT + "$", "", tree.split(" as ")[0])]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    paths = []
    for part in filter(None, parts):
        for p in expand_use(part):
            paths.append(prefix + p)
    return paths


def module_of(path, src):
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts == ["lib"] or parts == ["main"]:
        return ""
    if parts[-1] == "mod":
        parts = parts[:-1]
    return "::".join(parts)


def graph(crate_dir):
    src = Path(crate_dir) / "src"
    files = sorted(p for p in src.rglob("*.rs") if "bin" not in p.relative_to(src).parts[:-1])
    if (src / "lib.rs").exists():
        # The binary beside a library is its own crate root; its modules
        # are not the library's.
        files = [p for p in files if p != src / "main.rs"]
    modules = {module_of(p, src): p for p in files}
    texts = {m: drop_test_items(strip_comments_and_strings(p.read_text())) for m, p in modules.items()}

    # Names the root re-exports: `pub use a::b::{X, Y};` -> X: a::b.
    reexports = {}
    for use in re.findall(r"\bpub\s+use\s+([^;]+);", texts.get("", "")):
        for path in expand_use(use):
            segs = path.split("::")
            target = resolve(segs[:-1], "", modules)
            if target is not None:
                reexports[segs[-1]] = target

    edges = set()
    for mod, text in texts.items():
        if mod == "":
            continue
        refs = []
        for use in re.findall(r"\buse\s+([^;]+);", text):
            refs.extend(expand_use(use))
        refs.extend(re.findall(r"\b(crate(?:::" + IDENT + ")+)", text))
        refs.extend(re.findall(r"\b(super(?:::" + IDENT + ")+)", text))
        for ref in refs:
            target = resolve(ref.split("::"), mod, modules, reexports)
            if target is not None and target != mod and target != "":
                edges.add((mod, target))
    return sorted(m for m in modules if m), sorted(edges)


def resolve(segs, here, modules, reexports=None):
    """The module a path names (the longest module prefix), or None."""
    if not segs or segs == [""]:
        return None
    if segs[0] == "crate":
        base, rest = [], segs[1:]
    elif segs[0] == "super":
        base = here.split("::")[:-1] if here else []
        rest = segs[1:]
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    elif segs[0] == "self":
        base, rest = (here.split("::") if here else []), segs[1:]
    else:
        child = "::".join(([here] if here else []) + [segs[0]])
        if child in modules:
            base, rest = (here.split("::") if here else []), segs
        else:
            return None
    best = None
    for k in range(len(rest) + 1):
        name = "::".join(base + rest[:k])
        if name in modules:
            best = name
    if (best is None or best == "") and reexports is not None and not base and rest:
        return reexports.get(rest[0], best)
    return best


def cycles(nodes, edges):
    """Strongly connected components with more than one module, each with a
    concrete cycle through its modules."""
    succ = {n: [] for n in nodes}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ.get(v, []):
            if w not in index:
                strong(w)
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
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for n in nodes:
        if n not in index:
            strong(n)
    found = []
    for comp in comps:
        members = set(comp)
        start = comp[0]
        # Shortest cycle through `start` inside the component (BFS).
        prev, queue, seen = {}, [start], {start}
        path = None
        while queue and path is None:
            nxt = []
            for v in queue:
                for w in succ.get(v, []):
                    if w not in members:
                        continue
                    if w == start:
                        path = [v]
                        while path[-1] != start:
                            path.append(prev[path[-1]])
                        path.reverse()
                        break
                    if w not in seen:
                        seen.add(w)
                        prev[w] = v
                        nxt.append(w)
                if path:
                    break
            queue = nxt
        found.append((comp, (path or [start]) + [start]))
    return found


def levels_of(crate_dir):
    """The `levels` block of ARCHITECTURE.md for `crate_dir`, if any:
    ([(pattern, level)], [family])."""
    doc = Path(__file__).resolve().parent.parent / "ARCHITECTURE.md"
    if not doc.exists():
        return None
    name = str(Path(crate_dir)).rstrip("/")
    m = re.search(r"```levels " + re.escape(name) + r"\n(.*?)```", doc.read_text(), re.S)
    if not m:
        return None
    patterns, families = [], []
    for line in m.group(1).splitlines():
        key, _, rest = line.partition(":")
        if key.strip() == "families":
            families = rest.split()
        elif key.strip().isdigit():
            patterns.extend((p, int(key)) for p in rest.split())
    return patterns, families


def level(module, patterns):
    best = None
    for pattern, lvl in patterns:
        if pattern.endswith("*"):
            stem = pattern[:-1].rstrip(":")
            hit = module == stem or module.startswith(stem + "::")
        else:
            hit = module == pattern
        if hit and (best is None or len(pattern.rstrip("*")) > len(best[0].rstrip("*"))):
            best = (pattern, lvl)
    return None if best is None else best[1]


def family(module, families):
    top = module.split("::")[0]
    return top if top in families else None


def level_faults(nodes, edges, rules):
    patterns, families = rules
    faults = []
    for n in nodes:
        if level(n, patterns) is None:
            faults.append(f"module {n} has no level in ARCHITECTURE.md")
    for a, b in edges:
        la, lb = level(a, patterns), level(b, patterns)
        if la is not None and lb is not None and lb > la:
            faults.append(f"{a} (level {la}) imports {b} (level {lb}), a higher level")
        fa, fb = family(a, families), family(b, families)
        if fa and fb and fa != fb:
            faults.append(f"{a} imports {b}: family {fa} imports family {fb}")
    return faults


def main(argv):
    check = "--check" in argv
    crates = [a for a in argv if not a.startswith("--")]
    if not crates:
        print(__doc__, file=sys.stderr)
        return 2
    bad = False
    for crate in crates:
        nodes, edges = graph(crate)
        if not check:
            for a, b in edges:
                print(f"{a} -> {b}")
        for comp, path in cycles(nodes, edges):
            bad = True
            print(f"module cycle in {crate}: {' -> '.join(path)} (modules in the loop: {', '.join(comp)})",
                  file=sys.stderr)
        rules = levels_of(crate)
        if rules is not None:
            for fault in level_faults(nodes, edges, rules):
                bad = True
                print(f"module levels in {crate}: {fault}", file=sys.stderr)
        if check and not bad:
            extra = ", levels and families as ARCHITECTURE.md says" if rules else ""
            print(f"modules: {crate} ok ({len(nodes)} modules, {len(edges)} imports, no cycle{extra})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
