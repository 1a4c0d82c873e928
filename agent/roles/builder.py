"""Builder: implement / implement_changes → files written, tests run, `builder.completed`."""

from __future__ import annotations

from typing import Any

from agent.answers import AnswerSpec, obtain_answer
from agent.errors import PathRejected
from agent.prompt import PromptBuilder
from agent.roles.context import CommandContext, Outcome
from agent.roles.prompting import messages_for, quote_feedback, quote_files, quote_json, report_cuts
from agent.roles.testrun import run_tests
from agent.workspace import DIGEST_EXCLUDES, sanitize_id

__all__ = ["handle", "feedback_files"]


def feedback_files(task_id: str) -> list[str]:
    """Where lorch's loop leaves feedback for a task: the review and the spec notes."""
    safe = sanitize_id(task_id)
    return [f"reviews/{safe}.json", f"spec_notes/{safe}.json"]


def _check_paths(ctx: CommandContext):  # type: ignore[no-untyped-def]
    def check(answer: dict[str, Any]) -> None:
        for f in answer.get("files", []):
            ctx.workspace.resolve(f["path"])
            top = f["path"].lstrip("./").split("/", 1)[0]
            if top in DIGEST_EXCLUDES or top.startswith("."):
                raise PathRejected(f"the builder may not write into {top}/: {f['path']}", path=f["path"])
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
    listing = [rel for _, rel in zip(range(200), ctx.workspace.iter_files(), strict=False)]
    parts.append("## Workspace files\n" + "\n".join(listing))
    if ctx.settings.test_command:  # refuse before spending a model call on work we could not test
        from agent.sandbox import ensure_commands_allowed

        ensure_commands_allowed("the test command")
    ctx.progress("asking the model for a plan", stage="planning", progress=0.1)
    answer = obtain_answer(ctx, AnswerSpec("builder", "planning", _check_paths(ctx)),
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
