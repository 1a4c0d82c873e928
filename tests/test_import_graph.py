"""The import graph of `agent/`, imports inside functions included: layers point one way.

An import placed inside a function closes a cycle as surely as one at the top, so both count;
only `if TYPE_CHECKING:` blocks (never run) are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROLES = {"agent.roles.builder", "agent.roles.reviewer", "agent.roles.spec_maintainer", "agent.roles.orchestration"}



def _modules() -> dict[str, Path]:
    out = {}
    for path in (ROOT / "agent").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node but those under `if TYPE_CHECKING:`."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _nodes(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                # `from pkg import sub` imports the submodule when there is one, else the package
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph()
    assert "agent.sandbox.spawn" in graph["agent.test_command"]  # imported inside run_tests only


def test_no_import_cycle_at_all() -> None:
    assert [sorted(c) for c in cycles(import_graph())] == []


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_a_role_never_imports_another_role() -> None:
    graph = import_graph()
    crossing = {role: sorted(graph[role] & (ROLES - {role})) for role in ROLES}
    assert not any(crossing.values()), crossing


# Layers point one way (errors ← models ← Lua engine ← edits ← answering ← roles ← front ends): what
# each lower package must never import, counting imports inside functions.
_NEVER = {
    "errors": {"models", "plans", "edits", "answering", "roles", "cli", "supervised", "skills"},
    "models": {"plans", "edits", "answering", "roles", "cli", "supervised", "skills"},
    "edits": {"answering", "roles", "cli", "supervised"},
    "plans": {"answering", "roles"},
    "answering": {"roles", "cli", "supervised"},
}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else module


def test_lower_layers_never_import_higher_ones() -> None:
    graph = import_graph()
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                    if b.startswith("agent.") and _package(b) in _NEVER.get(_package(a), set()))
    assert upward == []
