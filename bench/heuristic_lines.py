"""Count the agent's heuristic code: what exists because a model slipped, not to do the job.

    python bench/heuristic_lines.py          # a table per part, and the total
    python bench/heuristic_lines.py --json

Read from the code as it is, so the figure follows every change:
- **strategies**: each named repair or fallback (`agent/answering/strategies.py`) where it is
  gated: a function that returns early when `enabled(ctx, NAME)` is off counts whole; otherwise the
  statements that consult `enabled`/`applied` for it (an `if`'s body with its test, or the one
  statement), each under the names it consults;
- **helpers**: a function, class or module constant used only from such lines (or from other
  helpers) counts whole, under the strategy that uses it most: it exists for the strategy;
- **modules**: the modules whose whole job is to make up for a model's slips (`MODULES`, each with
  why); a strategy's lines inside one count once, under the module.
Lines are lines of code: no blank lines, comments or docstrings; a second total counts raw lines (the
counted functions and modules whole, with their docstrings, comments and blank lines).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.answering.strategies import STRATEGIES  # noqa: E402

MODULES = {
    "agent/models/repetition.py": "stops a reply that loops",
    "agent/answering/sameness.py": "spots an answer that repeats an earlier one or loops",
    "agent/edits/py_merge.py": "merges a function given alone (or a file quoted in part) into its file",
    "agent/roles/goal_examples.py": "reads examples out of the goal's prose to guide the prompt",
    "agent/roles/goal_probe.py": "runs the goal's examples for goal_examples.py",
    "agent/roles/verdicts.py": "keeps a review's or spec answer's verdict on the same code",
    "agent/roles/test_ledger.py": "takes out the model's own failing tests",
    "agent/models/stops.py": "ends a reply where it would begin a project test file",
}
_GATES = ("enabled", "applied")


def _code_lines(tree: ast.Module, source: str) -> set[int]:
    """The lines of `source` that hold code (not blank, not only a comment, not a docstring)."""
    docs: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            docs.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return {i for i, line in enumerate(source.splitlines(), 1)
            if line.strip() and not line.strip().startswith("#") and i not in docs}


def _names_in(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and n.value in STRATEGIES}


def _gated_names(node: ast.AST, fn: ast.AST | None = None) -> set[str]:
    """The strategies `node`'s gates consult; a gate naming a variable (`enabled(ctx, name)`) consults
    every strategy named in its function."""
    out: set[str] = set()
    for c in ast.walk(node):
        if isinstance(c, ast.Call) and getattr(c.func, "id", None) in _GATES and len(c.args) > 1:
            out |= _names_in(c.args[1]) or (_names_in(fn) if fn is not None and isinstance(c.args[1], ast.Name) else set())
    return out


def _span(node: ast.AST) -> set[int]:
    return set(range(node.lineno, (node.end_lineno or node.lineno) + 1))  # type: ignore[attr-defined]


def _early_exit(stmt: ast.stmt, fn: ast.AST) -> bool:
    """`if not enabled(ctx, NAME) ...: return`: the function is there for the strategy alone."""
    return isinstance(stmt, ast.If) and any(isinstance(s, ast.Return) for s in stmt.body) and any(
        isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and _gated_names(n.operand, fn)
        for n in ast.walk(stmt.test))


def strategy_lines(path: Path) -> dict[str, set[int]]:
    """Per strategy, the lines of `path` that implement its gate."""
    tree = ast.parse(path.read_text())
    out: dict[str, set[int]] = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for stmt in fn.body:
            names = _gated_names(stmt, fn)
            if not names:
                continue
            if _early_exit(stmt, fn) or (isinstance(stmt, ast.Return) and len(fn.body) <= 3):
                parts = [(names, _span(fn))]
            elif isinstance(stmt, ast.If) and _gated_names(stmt.test, fn):
                parts = [(names, _span(stmt.test) | set().union(*(_span(s) for s in stmt.body)))]
            else:  # the innermost statements that consult a gate, each under its own names
                parts = [(_gated_names(s, fn), _span(s)) for s in ast.walk(stmt) if isinstance(s, ast.stmt)
                         and _gated_names(s, fn) and not any(isinstance(c, ast.stmt) and c is not s
                                                             and _gated_names(c, fn) for c in ast.walk(s))]
            for names_here, lines in parts:
                for name in names_here:
                    out.setdefault(name, set()).update(lines)
    return out


def _definitions(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """Functions, classes, methods and module constants: what a helper can be."""
    out: list[tuple[str, ast.AST]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((node.name, node))
        if isinstance(node, ast.ClassDef):
            out += [(m.name, m) for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and not m.name.startswith("__")]
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out += [(t.id, node) for t in targets if isinstance(t, ast.Name)]
    return out


def _references(tree: ast.Module) -> list[tuple[str, int]]:
    """Names, attributes and strings equal to a name (`getattr(module, "name")`), with their line."""
    return [(n.id, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Name)] + \
        [(n.attr, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Attribute)] + \
        [(n.value, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
         and n.value.isidentifier()]


def helper_lines(trees: dict[str, ast.Module], owned: dict[str, dict[int, str]]) -> dict[str, dict[int, str]]:
    """Grow `owned` (per file, line → strategy) by the definitions used only from owned lines.

    A private name (`_x`) is looked up in its own file, a public one in every file; a definition
    no line uses (a registry entry, an entry point) is not a helper."""
    refs = {rel: _references(tree) for rel, tree in trees.items()}
    defs = [(rel, name, node) for rel, tree in trees.items() for name, node in _definitions(tree)
            if rel != "agent/answering/strategies.py"]
    grown = True
    while grown:
        grown = False
        for rel, name, node in defs:
            span = _span(node)
            if span <= set(owned.get(rel, {})):
                continue
            where = [rel] if name.startswith("_") else list(trees)
            uses = [(r, line) for r in where for n, line in refs[r] if n == name and not (r == rel and line in span)]
            if not uses or not all(line in owned.get(r, {}) for r, line in uses):
                continue
            by = [owned[r][line] for r, line in uses]
            strategy = max(set(by), key=by.count)
            for line in span:
                owned.setdefault(rel, {}).setdefault(line, strategy)
            grown = True
    return owned


def count() -> dict[str, object]:
    trees: dict[str, ast.Module] = {}
    code: dict[str, set[int]] = {}
    owned: dict[str, dict[int, str]] = {}
    for path in sorted((ROOT / "agent").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        source = path.read_text()
        trees[rel] = ast.parse(source)
        code[rel] = _code_lines(trees[rel], source)
        if rel in MODULES:
            owned[rel] = {line: rel for line in range(1, len(source.splitlines()) + 1)}
            continue
        for name, lines in sorted(strategy_lines(path).items()):
            for line in lines:
                owned.setdefault(rel, {}).setdefault(line, name)
    helper_lines(trees, owned)
    strategies: dict[str, int] = {}
    modules: dict[str, int] = {}
    for rel, lines in owned.items():
        for line, owner in lines.items():
            if line in code[rel]:
                bucket = modules if owner in MODULES else strategies
                bucket[owner] = bucket.get(owner, 0) + 1
    total = sum(strategies.values()) + sum(modules.values())
    # Raw lines (docstrings, comments and blank lines inside the counted code too): the unit of the
    # issue's first estimate, "~2.9k of 23.5k lines".
    raw = sum(len(lines) for lines in owned.values())
    return {"strategies": dict(sorted(strategies.items(), key=lambda kv: -kv[1])),
            "modules": {rel: modules.get(rel, 0) for rel in sorted(MODULES)},
            "heuristic_lines": total, "agent_code_lines": sum(len(c) for c in code.values()),
            "heuristic_raw_lines": raw, "agent_raw_lines": sum(len((ROOT / rel).read_text().splitlines()) for rel in trees)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    figures = count()
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    print("| strategy | lines |\n|---|---|")
    for name, n in figures["strategies"].items():  # type: ignore[attr-defined]
        print(f"| {name} | {n} |")
    print("\n| module | lines | why |\n|---|---|---|")
    for rel, n in figures["modules"].items():  # type: ignore[attr-defined]
        print(f"| {rel} (and what only it uses) | {n} | {MODULES[rel]} |")
    print(f"\nheuristic lines of code: {figures['heuristic_lines']} of {figures['agent_code_lines']} in agent/")
    print(f"heuristic lines, raw: {figures['heuristic_raw_lines']} of {figures['agent_raw_lines']} in agent/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
