"""Reviewer: review → `reviews/<task>.json` and `review.completed` with top-level status."""

from __future__ import annotations

import re

import orjson

from agent.answers import AnswerSpec, obtain_answer
from agent.clock import utc_now
from agent.errors import AgentError
from agent.prompt import PromptBuilder
from agent.roles.context import CommandContext, Outcome
from agent.roles.prompting import messages_for, quote_files, quote_json, report_cuts
from agent.workspace import sanitize_id

__all__ = ["handle", "builder_files"]

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


def handle(ctx: CommandContext) -> Outcome:
    cmd = ctx.cmd
    budget = PromptBuilder(ctx.settings.budget)
    task_files = [p for p in cmd.inputs.get("task_files") or [] if isinstance(p, str)]
    changed = builder_files(ctx)
    to_read = list(dict.fromkeys([*changed, *task_files]))
    parts = [f"# Review task {cmd.task_id}", quote_json("Inputs", cmd.inputs),
             "## Files written by the builder\n" + ("\n".join(changed) or "(unknown)"),
             "## Files to review\n" + (quote_files(ctx, budget, to_read) or "(none found)")]
    ctx.progress(f"asking the model to review {len(to_read)} files", stage="reviewing")
    answer = obtain_answer(ctx, AnswerSpec("reviewer", "review"), messages_for(ctx, "\n".join(parts)))
    data = answer.data
    review = {"task_id": cmd.task_id, "status": data["status"], "findings": data["findings"],
              "summary": data["summary"], "created_at": utc_now()}
    art = ctx.write(f"reviews/{sanitize_id(cmd.task_id)}.json", orjson.dumps(review, option=orjson.OPT_INDENT_2))
    payload = {"summary": data["summary"], "findings": data["findings"], "review_file": art.path,
               "answer_via": answer.via}
    cuts = report_cuts(ctx, budget)
    if cuts:
        payload["prompt_cuts"] = cuts
    return Outcome("review.completed", payload, status=data["status"])
