"""Count the agent's heuristic code: what exists because a model slipped, not to do the job.

    python bench/heuristic_lines.py          # a table per part, and the total
    python bench/heuristic_lines.py --json

Read from the code as it is, so the figure follows every change:
- **strategies**: each named repair or fallback (`agent/answering/strategies.py`) where it is
  gated: a function that returns early when `enabled(ctx, NAME)` is off counts whole; otherwise the
  statements that consult `enabled`/`applied` for it (an `if`'s body with its test, or the one
  statement; the helpers such a statement calls are not followed, so this part is a floor);
- **modules**: the modules whose whole job is to make up for a model's slips (`MODULES`, each with
  why); a strategy's lines inside one count once, under the module.
Lines are lines of code: no blank lines, comments or docstrings.
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
    "agent/plans/loop_cut.py": "cuts a grammar-held plan at its loop and asks for the rest",
    "agent/plans/unclosed.py": "closes a long string that swallowed the plan's code",
    "agent/plans/lua_hints.py": "names the Lua way for the Python a model wrote into a plan",
    "agent/edits/py_merge.py": "merges a function given alone (or a file quoted in part) into its file",
    "agent/edits/near_match.py": "places an edit whose old text the model copied inexactly",
    "agent/roles/goal_examples.py": "reads examples out of the goal's prose to guide the prompt",
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


def _gated_names(node: ast.AST) -> set[str]:
    return {c.args[1].value for c in ast.walk(node)
            if isinstance(c, ast.Call) and getattr(c.func, "id", None) in _GATES and len(c.args) > 1
            and isinstance(c.args[1], ast.Constant) and c.args[1].value in STRATEGIES}


def _span(node: ast.AST) -> set[int]:
    return set(range(node.lineno, (node.end_lineno or node.lineno) + 1))  # type: ignore[attr-defined]


def _early_exit(stmt: ast.stmt) -> bool:
    """`if not enabled(ctx, NAME) ...: return`: the function is there for the strategy alone."""
    return isinstance(stmt, ast.If) and any(isinstance(s, ast.Return) for s in stmt.body) and any(
        isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and _gated_names(n.operand) for n in ast.walk(stmt.test))


def strategy_lines(path: Path) -> dict[str, set[int]]:
    """Per strategy, the lines of `path` that implement its gate."""
    tree = ast.parse(path.read_text())
    out: dict[str, set[int]] = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for stmt in fn.body:
            names = _gated_names(stmt)
            if not names:
                continue
            if _early_exit(stmt) or (isinstance(stmt, ast.Return) and len(fn.body) <= 3):
                lines = _span(fn)
            elif isinstance(stmt, ast.If) and _gated_names(stmt.test):
                lines = _span(stmt.test) | set().union(*(_span(s) for s in stmt.body))
            else:
                lines = set().union(*(_span(s) for s in ast.walk(stmt) if isinstance(s, ast.stmt)
                                      and _gated_names(s) and not any(isinstance(c, ast.stmt) and c is not s
                                                                      and _gated_names(c) for c in ast.walk(s))))
            for name in names:
                out.setdefault(name, set()).update(lines)
    return out


def count() -> dict[str, object]:
    strategies: dict[str, int] = {}
    modules: dict[str, int] = {}
    agent_lines = 0
    for path in sorted((ROOT / "agent").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        source = path.read_text()
        code = _code_lines(ast.parse(source), source)
        agent_lines += len(code)
        if rel in MODULES:
            modules[rel] = len(code)
            continue
        for name, lines in strategy_lines(path).items():
            strategies[name] = strategies.get(name, 0) + len(lines & code)
    total = sum(strategies.values()) + sum(modules.values())
    return {"strategies": dict(sorted(strategies.items(), key=lambda kv: -kv[1])), "modules": modules,
            "heuristic_lines": total, "agent_code_lines": agent_lines}


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
        print(f"| {rel} | {n} | {MODULES[rel]} |")
    print(f"\nheuristic lines of code: {figures['heuristic_lines']} of {figures['agent_code_lines']} in agent/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
