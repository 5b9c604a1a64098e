#!/usr/bin/env python3
"""The include graph between packtune's module folders, checked.

Every `#include "..."` of a C++ file in a folder of code (ROOTS: every top folder that holds
C++, the benchmarks, fuzz targets and examples included) is an arrow from the file's module to
the included file's module. A module is a top folder (tuners, packing, datasets, layers, spec,
actors, actor_process, ...), or one folder below src/ (src/driver); a file directly in src/
belongs to src.

Fails (exit 1) with the offending arrows when
  - the modules form a cycle: which module builds on which must stay a one-way street, or the
    libraries cannot be linked, tested or split apart one at a time;
  - tuners/ or packing/ reach LibTorch (<torch/...>, <ATen/...>, <c10/...>) or ZeroMQ
    (<zmq.h>, <zmq.hpp>, ...), directly or through the headers they include: the tuners and
    the planner are plain C++ that tuner plugins and the driver build without either;
  - a module of src/ reaches LibTorch: the driver, the node and the CLI build without it
    (what they need of actors/ is plain C++), so they compile in seconds.

--print writes the graph as a short list (one module a line, with what it includes), for the
docs. Run: python3 tests/include_graph.py [--print] [REPO_ROOT]
"""
import argparse
import os
import re
import sys
from collections import defaultdict

ROOTS = [
    "tuners", "packing", "datasets", "layers", "spec", "actors", "actor_process", "reference", "src", "include",
    "bench", "fuzz", "examples",
]
SPLIT = {"src"}  # its subfolders are modules of their own
PLAIN = {"tuners", "packing"}  # no LibTorch, no ZeroMQ
SOURCES = (".cpp", ".hpp", ".h", ".cc", ".inl")
# Where a quoted include is looked for, after the including file's own folder (the include
# directories the CMake targets set).
SEARCH = ["", "include", "src"]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
FORBIDDEN = re.compile(r"^(torch|ATen|c10)/|^zmq(\.h|\.hpp|_addon\.hpp)$")
TORCH = re.compile(r"^(torch|ATen|c10)/")


def module_of(rel):
    parts = rel.split("/")
    if parts[0] in SPLIT and len(parts) > 2:
        return parts[0] + "/" + parts[1]
    return parts[0]


def scan(root):
    """Files by repository path: (module, [(line, quoted target path or None, raw, system)])."""
    files = {}
    for top in ROOTS:
        for folder, dirs, names in os.walk(os.path.join(root, top)):
            dirs.sort()
            for name in sorted(names):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                includes = []
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m:
                            includes.append((number, m.group(2), m.group(1) == "<"))
                files[rel] = (module_of(rel), includes)
    return files


def resolve(root, rel, target, files):
    here = os.path.dirname(rel)
    for base in [here] + SEARCH:
        candidate = os.path.normpath(os.path.join(base, target)).replace(os.sep, "/")
        if candidate in files:
            return candidate
    return None


def build(root):
    files = scan(root)
    arrows = defaultdict(list)  # (from module, to module) -> ["file:line includes target"]
    file_edges = defaultdict(list)  # file -> [(line, included file)]
    forbidden = {}  # file -> (line, header) of its first LibTorch/ZeroMQ include
    torch = {}  # file -> (line, header) of its first LibTorch include
    for rel, (module, includes) in files.items():
        for number, target, system in includes:
            if system:
                if FORBIDDEN.search(target) and rel not in forbidden:
                    forbidden[rel] = (number, target)
                if TORCH.search(target) and rel not in torch:
                    torch[rel] = (number, target)
                continue
            found = resolve(root, rel, target, files)
            if found is None:
                continue  # generated, or a third party's header
            file_edges[rel].append((number, found))
            to = files[found][0]
            if to != module:
                arrows[(module, to)].append(f"{rel}:{number} includes \"{target}\"")
    return files, arrows, file_edges, forbidden, torch


def cycles(modules, arrows):
    """The strongly connected components with more than one module (Tarjan)."""
    out_edges = defaultdict(set)
    for a, b in arrows:
        out_edges[a].add(b)
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(out_edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return found


def reaches_forbidden(start, file_edges, forbidden):
    """A chain of includes from `start` to a file that includes LibTorch or ZeroMQ, or None."""
    seen = {start: None}
    queue = [start]
    while queue:
        f = queue.pop(0)
        if f in forbidden:
            chain = []
            while f is not None:
                chain.append(f)
                f = seen[f]
            return list(reversed(chain))
        for _, g in file_edges.get(f, []):
            if g not in seen:
                seen[g] = f
                queue.append(g)
    return None


def topological(modules, arrows):
    """Modules with those they include first (alphabetical among equals); the graph is acyclic."""
    needs = {m: {b for (a, b) in arrows if a == m} for m in modules}
    done, order = set(), []
    while len(order) < len(modules):
        ready = sorted(m for m in modules if m not in done and needs[m] <= done)
        if not ready:  # a cycle: list the rest as they are
            ready = sorted(m for m in modules if m not in done)
        for m in ready:
            done.add(m)
            order.append(m)
    return order


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--print", action="store_true", help="print the graph as a list of modules")
    parser.add_argument("root", nargs="?", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args()

    files, arrows, file_edges, forbidden, torch = build(args.root)
    modules = sorted({m for m, _ in files.values()})
    if args.print:
        for m in topological(modules, arrows):
            deps = sorted(b for (a, b) in arrows if a == m)
            print(f"{m} -> {', '.join(deps) if deps else '(nothing)'}")

    problems = []
    for component in cycles(modules, arrows):
        problems.append("a cycle between the modules " + ", ".join(component) + ":")
        for (a, b), where in sorted(arrows.items()):
            if a in component and b in component:
                problems.append(f"  {a} -> {b}: " + "; ".join(where[:3]) + (" ..." if len(where) > 3 else ""))
    for rel in sorted(files):
        if files[rel][0] not in PLAIN:
            continue
        chain = reaches_forbidden(rel, file_edges, forbidden)
        if chain:
            line, header = forbidden[chain[-1]]
            through = " -> ".join(chain)
            problems.append(f"{files[rel][0]} must not include LibTorch or ZeroMQ: {through} "
                            f"(line {line}: <{header}>)")
    for rel in sorted(files):
        module = files[rel][0]
        if module != "src" and not module.startswith("src/"):
            continue
        chain = reaches_forbidden(rel, file_edges, torch)
        if chain:
            line, header = torch[chain[-1]]
            problems.append(f"{module} must not include LibTorch: {' -> '.join(chain)} (line {line}: <{header}>)")
    if problems:
        print("include_graph: " + "\n".join(problems), file=sys.stderr)
        return 1
    if not args.print:
        print(f"include_graph: {len(modules)} modules, {len(arrows)} arrows, no cycle; "
              f"{' and '.join(sorted(PLAIN))} include neither LibTorch nor ZeroMQ; src/ does not reach LibTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
