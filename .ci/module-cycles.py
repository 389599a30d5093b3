#!/usr/bin/env python3
"""Module-cycle check for one crate's src/ (CI step `cycles`; exits 1 on a cycle).

Nodes are files. An edge a -> b when a names an item that b defines (or b itself, as a
module) through `use crate::..`, `use super::..`, `use self::..`, `use child::..` (a
declared child), or a `crate::`/`super::`/`self::` path in code. Re-exports are followed
to the file that defines the item, so `use super::Error` where the parent only says
`pub use error::Error` is an edge to error.rs, not to the parent. `mod x;` alone is no
edge. `--methods` adds edges for inherent methods: `self.f(`/`Self::f(` inside an
`impl T` calling a method of `T` defined in another file's `impl T`.

usage: core_cycles.py SRC_DIR [--methods] [--skip DIR ...] [--edges] [--folders a,b,..]
"""
import os
import re
import sys
from collections import defaultdict

args = sys.argv[1:]
src = os.path.abspath(args[0])
methods = "--methods" in args
show_edges = "--edges" in args
skip = [a for i, a in enumerate(args) if i > 0 and args[i - 1] == "--skip"]
folders = None
if "--folders" in args:
    folders = args[args.index("--folders") + 1].split(",")

KEYWORDS_EXTERN = {"std", "core", "alloc", "gimli", "scroll", "heapless", "defmt", "memchr",
                   "miniz_oxide", "divan"}


def strip(text):
    """Comments and string/char literals removed (lengths kept roughly)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if text[i] == "\n":
                        out.append("\n")
                    i += 1
            continue
        m = re.match(r'b?r(#*)"', text[i:i + 10])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
            continue
        if c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12])
            if m:
                out.append("' '")
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


def module_of(path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main"):
        rel = rel[:-1]
    elif rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


files = {}
for root, dirs, names in os.walk(src):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in [os.path.join(src, s) for s in skip]]
    for name in names:
        if name.endswith(".rs"):
            p = os.path.join(root, name)
            files[module_of(p)] = p
rel = {m: os.path.relpath(p, src) for m, p in files.items()}


def split_inline(text):
    """(text outside inline modules, [(name, body)])"""
    outside, inner = [], []
    i = 0
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", text):
        if m.start() < i:
            continue
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        outside.append(text[i:m.start()])
        inner.append((m.group(1), text[m.end():j - 1]))
        i = j
    outside.append(text[i:])
    return "".join(outside), inner


def expand_use(tree):
    """`a::{b, c::{d as e}}` -> [['a','b'], ['a','c','d']] (renames kept as last alias)."""
    tree = re.sub(r"\s+", " ", tree).strip()

    def parse(s, prefix):
        res, depth, cur = [], 0, ""
        parts = []
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        for part in parts:
            part = part.strip()
            if not part:
                continue
            if "{" in part:
                head = part[:part.index("{")].rstrip(":").strip()
                body = part[part.index("{") + 1:part.rindex("}")]
                segs = [x for x in head.split("::") if x]
                res += parse(body, prefix + segs)
            else:
                alias = None
                if " as " in part:
                    part, alias = [x.strip() for x in part.split(" as ")]
                segs = [x.strip() for x in part.split("::") if x.strip()]
                res.append((prefix + segs, alias))
        return res

    return parse(tree, [])


info = {}
for mod, path in files.items():
    text = strip(open(path).read())
    outside, inline = split_inline(text)
    children = set(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", outside, re.M))
    defs = set(re.findall(
        r"\b(?:struct|enum|fn|const|static|type|trait|union)\s+(\w+)", outside))
    defs |= set(re.findall(r"macro_rules!\s*(\w+)", outside))
    uses = []  # (segments, alias, is_pub, in_inline)
    for body, inl in [(outside, False)] + [(b, True) for _, b in inline]:
        for m in re.finditer(r"(\bpub(?:\([^)]*\))?\s+)?\buse\s+([^;]+);", body):
            for segs, alias in expand_use(m.group(2)):
                uses.append((segs, alias, bool(m.group(1)), inl))
    paths = []
    for body, inl in [(outside, False)] + [(b, True) for _, b in inline]:
        body_nouse = re.sub(r"\buse\s+[^;]+;", "", body)
        for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", body_nouse):
            paths.append((m.group(1).split("::"), inl))
    info[mod] = dict(children=children, defs=defs, uses=uses, paths=paths, text=outside)

# Re-exports / imports per module: name -> absolute path segments.
def absolute(mod, segs, inl):
    """Absolute module path segments (no 'crate') for a path used in `mod`."""
    segs = list(segs)
    base = list(mod)
    if inl:
        # Inside an inline module of this file: one `super` climbs back to the file.
        if segs and segs[0] == "super":
            segs = segs[1:]
            if segs and segs[0] == "super":
                pass
            else:
                segs = ["self"] + segs
    if not segs:
        return None
    if segs[0] == "crate":
        return segs[1:]
    if segs[0] == "self":
        return base + segs[1:]
    if segs[0] == "super":
        while segs and segs[0] == "super":
            base = base[:-1]
            segs = segs[1:]
        return base + segs
    if segs[0] in info[mod]["children"]:
        return base + segs
    return None  # extern crate or a local name


imports = {}
for mod, d in info.items():
    m = {}
    for segs, alias, is_pub, inl in d["uses"]:
        if inl:
            continue
        a = absolute(mod, segs, False)
        if a is None or not segs or segs[-1] in ("*", "self"):
            continue
        m[alias or segs[-1]] = a
    imports[mod] = m


def resolve(target, depth=0):
    """File module that defines the item at absolute path `target` (or the module)."""
    if depth > 20:
        return None
    # longest module prefix
    for k in range(len(target), -1, -1):
        pre = tuple(target[:k])
        if pre in files:
            rest = target[k:]
            if not rest or rest[0] in ("*", "self"):
                return pre
            name = rest[0]
            if name in info[pre]["defs"]:
                return pre
            if name in imports[pre]:
                return resolve(imports[pre][name] + rest[1:], depth + 1)
            return pre
    return None


edges = defaultdict(set)
why = {}
for mod, d in info.items():
    items = [(s, inl) for s, _, _, inl in d["uses"]] + d["paths"]
    for segs, inl in items:
        a = absolute(mod, segs, inl)
        if a is None:
            continue
        t = resolve(a)
        if t is not None and t != mod:
            edges[mod].add(t)
            why.setdefault((mod, t), "::".join(segs))

if methods:
    # inherent impl blocks per file: type -> set(method)
    defs_by = defaultdict(lambda: defaultdict(set))
    calls_by = defaultdict(lambda: defaultdict(set))
    for mod, d in info.items():
        text = d["text"]
        for m in re.finditer(r"\bimpl\s*(?:<[^{]*?>)?\s*(\w+)\s*(?:<[^{]*?>)?\s*\{", text):
            # skip trait impls (`impl X for Y`): the regex only matches `impl T {`.
            depth, j = 1, m.end()
            while j < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            body = text[m.end():j]
            ty = m.group(1)
            for f in re.findall(r"\bfn\s+(\w+)", body):
                defs_by[ty][f].add(mod)
            for f in re.findall(r"\b(?:self\.|Self::)(\w+)\s*\(", body):
                calls_by[mod][ty].add(f)
    for mod, per in calls_by.items():
        for ty, fs in per.items():
            for f in fs:
                owners = defs_by[ty].get(f, set())
                if mod in owners:
                    continue
                for o in owners:
                    edges[mod].add(o)
                    why.setdefault((mod, o), f"{ty}::{f} (method)")

# Tarjan
index, low, on, stack, sccs = {}, {}, set(), [], []
counter = [0]


def strong(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on.add(v)
    for w in sorted(edges[v]):
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
        sccs.append(comp)


sys.setrecursionlimit(10000)
for v in sorted(files):
    if v not in index:
        strong(v)

cyclic = [sorted(c) for c in sccs if len(c) > 1]


def in_folders(m):
    return folders is None or (m and m[0] in folders)


print(f"files: {len(files)}, edges: {sum(len(v) for v in edges.values())}"
      + (" (with inherent-method edges)" if methods else " (use/path edges)"))
shown = [c for c in cyclic if any(in_folders(m) for m in c)]
if not shown:
    print("no cycle" + ("" if folders is None else f" touching {','.join(folders)}"))
for c in shown:
    print("CYCLE: " + " , ".join(rel[m] for m in c))
    cs = set(c)
    for a in c:
        for b in sorted(edges[a] & cs):
            print(f"    {rel[a]} -> {rel[b]}   [{why[(a, b)]}]")
if show_edges:
    for a in sorted(files):
        if in_folders(a):
            for b in sorted(edges[a]):
                print(f"  {rel[a]} -> {rel[b]}   [{why[(a, b)]}]")
sys.exit(1 if shown else 0)
