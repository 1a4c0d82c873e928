"""Builder: implement / implement_changes → files written, tests run, `builder.completed`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.answers import AnswerSpec, obtain_answer
from agent.prompt import PromptBuilder
from agent.roles.context import CommandContext, Outcome
from agent.roles.prompting import messages_for, quote_feedback, quote_files, quote_json, report_cuts
from agent.roles.testrun import run_tests
from agent.workspace import sanitize_id

__all__ = ["handle", "feedback_files"]


def feedback_files(task_id: str) -> list[str]:
    """Where lorch's loop leaves feedback for a task: the review and the spec notes."""
    safe = sanitize_id(task_id)
    return [f"reviews/{safe}.json", f"spec_notes/{safe}.json"]


def _check_paths(ctx: CommandContext) -> Callable[[dict[str, Any]], None]:
    """Refuse, while the model can still repair it, every file the workspace would refuse:
    the path policy on the normalised path, symlinks, and secrets in the content."""
    def check(answer: dict[str, Any]) -> None:
        for f in answer.get("files", []):
            ctx.workspace.check_write(f["path"], f["content"], policy=ctx.policy)
    return check


def handle(ctx: CommandContext) -> Outcome:
    cmd = ctx.cmd
    budget = PromptBuilder(ctx.settings.budget)
    parts = [f"# Task {cmd.task_id}: {cmd.action}", quote_json("Inputs", cmd.inputs)]
    task_files = [p for p in cmd.inputs.get("task_files") or [] if isinstance(p, str)]
    if task_files:
        parts.append("## Current task files\n" + (quote_files(ctx, budget, task_files) or "(none exist yet)"))
    if cmd.action == "implement_changes":
        parts.append("## Feedback to address\n" + (quote_feedback(ctx, budget, feedback_files(cmd.task_id))
                                                   or "(no review or spec notes found)"))
    listing = ctx.workspace.listing(200)
    parts.append("## Workspace files\n" + "\n".join(listing))
    if ctx.settings.test_command:  # refuse before spending a model call on work we could not test
        from agent.sandbox import ensure_commands_allowed

        ensure_commands_allowed("the test command")
    ctx.progress("asking the model for a plan", stage="planning", progress=0.1)
    answer = obtain_answer(ctx, AnswerSpec("builder", "planning", _check_paths(ctx), guard_answer=False),
                           messages_for(ctx, "\n".join(parts)))
    for f in answer.data.get("files", []):
        ctx.write(f["path"], f["content"])
    ctx.progress("files written; running tests", stage="testing", progress=0.8, files=len(ctx.artifacts))
    tests = run_tests(ctx.settings.test_command, str(ctx.workspace.root),
                      min(ctx.settings.test_timeout_s, max(1.0, ctx.seconds_left())))
    ctx.log("info", "tests ran", status=tests["status"])
    payload: dict[str, Any] = {"summary": answer.data["summary"], "tests": tests,
                               "files": [a.path for a in ctx.artifacts], "answer_via": answer.via}
    cuts = report_cuts(ctx, budget)
    if cuts:
        payload["prompt_cuts"] = cuts
    return Outcome("builder.completed", payload, status="success")
