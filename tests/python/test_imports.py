"""The package's modules import one another without a cycle, counting the imports inside
functions too: a module that runs, resumes or exports a run sits above the one that reads it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

import packtune

PACKAGE = Path(packtune.__file__).parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: Set[str]) -> Set[str]:
    """The package's modules that the file at `path` imports, anywhere in it."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: List[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            base = f"{base}.{node.module}" if node.level and node.module else (node.module or base)
            # `from . import x` and `from .pkg import mod` name modules; else the names are in base.
            targets = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules] or [base]
        found |= {target for target in targets if target in modules and target != name}
    return found


def cycle(graph: Dict[str, Set[str]]) -> List[str]:
    """A cycle of the graph, as the modules along it, or [] where there is none."""
    state: Dict[str, int] = {}
    path: List[str] = []

    def visit(node: str) -> List[str]:
        state[node] = 1
        path.append(node)
        for child in sorted(graph[node]):
            if state.get(child) == 1:
                return path[path.index(child):] + [child]
            if child not in state and (found := visit(child)):
                return found
        state[node] = 2
        path.pop()
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_module_graph_has_no_cycle() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in files}
    graph = {module_name(path): imports(path, modules) for path in files}
    assert "packtune.experiment" in graph["packtune.trackers.follow"]  # the walk sees the imports
    assert cycle(graph) == []


def test_the_cycle_finder_finds_one() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []
