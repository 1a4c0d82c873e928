"""What the roles share about one task: the files the builder wrote, the spec, the examples as a
plan reads them, and what a review finding may only say again.

Roles never import one another; what two of them need lives here.
"""

from __future__ import annotations

import os
import re
from typing import Any

import orjson

from agent.answering.answer_spec import strings_in
from agent.answering.conversation import system_prompt
from agent.command_context import CommandContext
from agent.errors import AgentError
from agent.pathpolicy import AGENT
from agent.roles.goal_examples import said
from agent.roles.prompting import read_project_text
from agent.workspace import sanitize_id

__all__ = ["SPEC_SEARCH", "builder_files", "find_spec", "restates_goal", "restatable_text", "examples_for_plans",
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


_WORD = re.compile(r"[a-z_][a-z0-9_]{2,}|\d+")
_PLAIN = frozenset("the and for that this with goal function method code should must needs need not are was "
                   "its from into when then also all any has have does did make sure".split())


def restates_goal(comment: str, goal: str) -> bool:
    """A finding that is the goal said again (at least 5 words besides plain ones like "the" or
    "function", at most one in ten not the goal's; an input of its own makes it concrete): nothing
    the builder can act on. A small model may restate the goal as its finding for code whose
    examples hold, every round; each time the builder is asked again and may break the working
    function."""
    words = [w for w in _WORD.findall(comment.lower()) if w not in _PLAIN]
    known = set(_WORD.findall(goal.lower()))
    return len(words) >= 5 and sum(w not in known for w in words) <= len(words) // 10


def restatable_text(ctx: CommandContext, shown: list[str]) -> str:
    """What a finding may only say again: the goal, the reviewer's own instructions and the
    project's prose files under review (spec, plan): small models also repeat their own
    instructions ("…review the implementation of the task against its goal…") or a line of the
    spec as a finding."""
    docs = [read_project_text(ctx, p, max_bytes=64 * 1024) or "" for p in shown if p.lower().endswith((".md", ".txt"))]
    # The paths themselves too: naming a file says nothing it must change, and a restated goal that
    # names a file would otherwise pass as concrete until review_loop_limit on right code.
    return " ".join([*strings_in(ctx.cmd.inputs), system_prompt(ctx.role, "json"), *docs, *shown])


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
