"""What the roles share about one task: the files the builder wrote, the spec, the examples as a
plan reads them, and what a review finding may only say again.

Roles never import one another; what two of them need lives here.
"""

from __future__ import annotations

import os
import re
from typing import Any

import orjson

from agent.command_context import CommandContext
from agent.errors import AgentError
from agent.pathpolicy import AGENT
from agent.roles.goal_examples import said
from agent.workspace import sanitize_id

__all__ = ["SPEC_SEARCH", "builder_files", "find_spec", "examples_for_plans",
           "load_json"]

SPEC_SEARCH = ("MASTER-SPEC.md", "SPEC.md", "spec.md", "specs/MASTER-SPEC.md", "specs/SPEC.md",
               "docs/MASTER-SPEC.md", "docs/SPEC.md")
_BUILDER_RECEIPT = re.compile(r"^(implement|implement_changes)-(\d+)\.json$")


def builder_files(ctx: CommandContext) -> list[str]:
    """Files the builder wrote for this task, from its receipts (sorted, unique)."""
    task_dir = f"receipts/{sanitize_id(ctx.cmd.task_id)}"
    try:
        names = [name for name, _ in ctx.workspace.listdir(task_dir)]
    except (OSError, AgentError):
        return []
    paths: set[str] = set()
    for name in names:
        if not _BUILDER_RECEIPT.match(name):
            continue
        try:
            data = orjson.loads(ctx.workspace.read_bytes(f"{task_dir}/{name}"))
            paths.update(a["path"] for a in data.get("artifacts", []))
        except (OSError, AgentError, orjson.JSONDecodeError, KeyError, TypeError):
            continue
    return sorted(paths)


def find_spec(ctx: CommandContext) -> str | None:
    """The configured spec path, else the first of SPEC_SEARCH, else the first Markdown file in specs/."""
    if ctx.settings.spec_path:
        return ctx.settings.spec_path if ctx.workspace.exists(ctx.settings.spec_path) else None
    found = next((p for p in SPEC_SEARCH if ctx.workspace.exists(p)), None)
    if found:
        return found
    try:
        names = sorted(os.listdir(ctx.workspace.resolve("specs")))
    except (AgentError, OSError):
        return None
    return next((f"specs/{n}" for n in names if n.lower().endswith(".md") and not n.startswith(".")
                 and ctx.workspace.is_file(f"specs/{n}", policy=AGENT)), None)


def _example_path(ctx: CommandContext, result: dict[str, Any], to_read: list[str]) -> str:
    """The file a finding about an example cites: the function's module, else a file the builder wrote
    or one under review."""
    return str(result.get("path") or next(iter([*builder_files(ctx), *to_read]), "."))


def examples_for_plans(ctx: CommandContext, checked: list[dict[str, Any]], to_read: list[str]) -> list[dict[str, Any]]:
    """`context.examples` of a review plan: each example as the agent ran it, ready to cite."""
    return [{"call": r["call"], "held": bool(r["held"]), "got": str(r.get("got", "")),
             "expected": said(r["expected"]), "path": _example_path(ctx, r, to_read),
             **({"line": r["line"]} if isinstance(r.get("line"), int) else {})} for r in checked]


def load_json(ctx: CommandContext, rel: str) -> Any:
    """A JSON record of the workspace (a review, spec notes), or None when missing or unreadable."""
    try:
        return orjson.loads(ctx.workspace.read_bytes(rel, max_bytes=4 * 1024 * 1024))
    except (AgentError, OSError, orjson.JSONDecodeError):
        return None
