#!/usr/bin/env python3
"""Import cycles between the modules of one crate.

Usage: tools/check-imports.py CRATE_DIR [CRATE_DIR ...]   (a directory holding Cargo.toml and src/)

Every module (a file, or an inline `mod name { .. }`) is a node. A path that a module names
(`crate::a::b`, `super::x`, `self::y`, or a child module's name) resolves to the deepest module it
reaches. Such a reference counts as an edge between the two sibling modules under the pair's
closest common ancestor: `wire::view -> wire::roce` is an edge view -> roce inside `wire`;
`qp::responder -> mr` is an edge qp -> mr at the crate root. References between a module and its
own ancestors or descendants are not edges (a parent declares and uses its children). A cycle is a
strongly connected group of siblings; each one is printed with one example reference per edge,
and the exit status is 1 when there is any.
"""
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_RE = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:::" + IDENT + r")+|" + r"(?:super)(?:::super)*)")
USE_RE = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.S)
MOD_DECL_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", re.M)
INLINE_MOD_RE = re.compile(r"(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*\{")


def strip_comments_and_strings(text):
    """Blank out comments, string and char literals (keeping newlines and lengths)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
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
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 8]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def module_files(src, root):
    """Maps module paths (tuples) to files, following `mod x;` declarations from the crate root."""
    mods = {}

    def visit(path, file, dir_for_children):
        mods[path] = file
        text = strip_comments_and_strings(open(file, encoding="utf-8").read())
        for m in MOD_DECL_RE.finditer(text):
            name = m.group(1)
            for cand in (os.path.join(dir_for_children, name + ".rs"), os.path.join(dir_for_children, name, "mod.rs")):
                if os.path.exists(cand):
                    child_dir = os.path.join(dir_for_children, name)
                    visit(path + (name,), cand, child_dir)
                    break

    visit((), os.path.join(src, root), src)
    return mods


def inline_module_at(text):
    """For each offset, the inline module path (relative to the file's module) it lies in."""
    spans = []  # (start, end, name-path)
    stack = []  # (name, depth at open)
    depth = 0
    pending = {}
    for m in INLINE_MOD_RE.finditer(text):
        pending[m.end() - 1] = m.group(1)
    names = []
    result = []
    for i, c in enumerate(text):
        if c == "{":
            depth += 1
            if i in pending:
                stack.append((pending[i], depth))
                names.append(pending[i])
                result.append((i, tuple(names)))
        elif c == "}":
            if stack and stack[-1][1] == depth:
                stack.pop()
                names.pop()
                result.append((i, tuple(names)))
            depth -= 1
    return result


def context_at(changes, offset):
    ctx = ()
    for pos, names in changes:
        if pos > offset:
            break
        ctx = names
    return ctx


def expand_use(tree):
    """Expands a use tree `a::{b, c::{d}}` into flat paths."""
    tree = re.sub(r"\s+", "", tree)
    out = []

    def rec(prefix, t):
        # split top-level commas
        parts, depth, cur = [], 0, ""
        for ch in t:
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
        for p in parts:
            if "{" in p:
                head, rest = p.split("{", 1)
                rec(prefix + head, rest[:-1])
            else:
                out.append(prefix + p)

    rec("", tree)
    return [re.sub(r"\bas\b.*$", "", p).rstrip(":") for p in out]


def resolve(mods, here, segs):
    """The deepest module a path reaches, or None when it leaves the crate."""
    if not segs:
        return None
    cur = list(here)
    i = 0
    if segs[0] == "crate":
        cur, i = [], 1
    elif segs[0] in ("self", "super"):
        while i < len(segs) and segs[i] in ("self", "super"):
            if segs[i] == "super":
                if not cur:
                    return None
                cur.pop()
            i += 1
    elif tuple(cur + [segs[0]]) in mods:
        pass  # a child module named relatively
    else:
        return None
    while i < len(segs) and tuple(cur + [segs[i]]) in mods:
        cur.append(segs[i])
        i += 1
    return tuple(cur)


def crate_graph(crate_dir, root):
    src = os.path.join(crate_dir, "src")
    mods = module_files(src, root)
    files = {}
    for path, f in mods.items():
        files.setdefault(f, path)
    all_mods = set(mods)
    edges = {}  # (parent, a, b) -> example
    for f, fmod in files.items():
        raw = open(f, encoding="utf-8").read()
        text = strip_comments_and_strings(raw)
        changes = inline_module_at(text)
        inline = set()
        for _, names in changes:
            for k in range(1, len(names) + 1):
                inline.add(fmod + names[:k])
        known = all_mods | inline
        refs = []
        for m in USE_RE.finditer(text):
            for p in expand_use(m.group(1)):
                refs.append((m.start(), p))
        for m in PATH_RE.finditer(text):
            refs.append((m.start(), m.group(1)))
        for off, p in refs:
            here = fmod + context_at(changes, off)
            segs = [s for s in p.split("::") if s]
            target = resolve({k: None for k in known}, here, segs)
            if target is None:
                continue
            # the closest common ancestor and the two siblings under it
            k = 0
            while k < min(len(here), len(target)) and here[k] == target[k]:
                k += 1
            if k == len(here) or k == len(target):
                continue  # ancestor or descendant
            parent, a, b = here[:k], here[k], target[k]
            line = raw.count("\n", 0, off) + 1
            edges.setdefault((parent, a, b), f"{os.path.relpath(f)}:{line} {p}")
    return edges


def cycles(edges):
    by_parent = {}
    for (parent, a, b), ex in edges.items():
        by_parent.setdefault(parent, {}).setdefault(a, {})[b] = ex
    found = []
    for parent, g in sorted(by_parent.items()):
        index, low, stack, on, comps = {}, {}, [], set(), []
        counter = [0]

        def strong(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in g.get(v, {}):
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

        nodes = set(g) | {w for vs in g.values() for w in vs}
        for v in sorted(nodes):
            if v not in index:
                strong(v)
        for comp in comps:
            ex = [(a, b, g[a][b]) for a in comp for b in comp if b in g.get(a, {})]
            found.append((parent, comp, ex))
    return found


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    sys.setrecursionlimit(10000)
    bad = 0
    for crate_dir in argv[1:]:
        if not os.path.isdir(os.path.join(crate_dir, "src")):
            print(f"check-imports: {crate_dir}: no src/ directory", file=sys.stderr)
            return 2
        roots = [r for r in ("lib.rs", "main.rs") if os.path.exists(os.path.join(crate_dir, "src", r))]
        found = [(r,) + c for r in roots for c in cycles(crate_graph(crate_dir, r))]
        for root, parent, comp, ex in found:
            bad += 1
            where = "::".join(("crate",) + parent)
            print(f"{crate_dir} ({root}): cycle in {where}: {' <-> '.join(comp)}")
            for a, b, e in ex:
                print(f"    {a} -> {b}   ({e})")
    if bad:
        print(f"check-imports: {bad} cycle(s)")
        return 1
    print(f"check-imports: no cycles in {', '.join(argv[1:])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
