"""Reviewer: review → `reviews/<task>.json` and `review.completed` with top-level status.

A finding must be grounded: it cites a file that exists, and a cited line exists in it (a small
model may cite a line past a file's end, round after round, and the builder cannot act on it). From the second
round on, the reviewer sees its previous review and what changed since, and is told not to
repeat what was addressed; the round that reaches `--max-review-rounds` and still asks for
changes ends the loop (`review_loop_limit`).
"""

from __future__ import annotations

import difflib
from typing import Any

import orjson

from agent.answering.loop import AnswerSpec, InvalidAnswer, obtain_answer
from agent.answering.strategies import applied, enabled
from agent.clock import utc_now
from agent.command_context import CommandContext, Outcome
from agent.edits.changes import is_test_path
from agent.errors import AgentError, ReviewLoopLimit
from agent.pathpolicy import AGENT
from agent.project_files import bookkeeping_reason, line_count, paths_named_in, project_files
from agent.prompt import PromptBuilder
from agent.roles.goal_examples import examples_section, run_goal_examples
from agent.roles.loops import current_round, end_loop
from agent.roles.prompting import (
    listing_section,
    quote_feedback,
    quote_files,
    quote_json,
    read_project_text,
    report_cuts,
    small_project_files,
)
from agent.roles.task_files import (
    builder_files,
    examples_for_plans,
    load_json,
)
from agent.roles.testrun import test_workspace, tests_section
from agent.roles.verdicts import record_verdict, verdict_on_same_code
from agent.workspace import AGENT_DIR, sanitize_id

__all__ = ["handle", "grounding_errors", "diff_summary"]

_SNAPSHOT_BYTES = 64 * 1024
_DIFF_LINES = 60


def _review_file(task_id: str) -> str:
    return f"reviews/{sanitize_id(task_id)}.json"


def _snapshot_file(task_id: str) -> str:
    return f"{AGENT_DIR}/reviewed/{sanitize_id(task_id)}.json"


def _previous_findings(ctx: CommandContext) -> list[dict[str, Any]]:
    data = load_json(ctx, _review_file(ctx.cmd.task_id))
    findings = data.get("findings") if isinstance(data, dict) else None
    return [f for f in findings or [] if isinstance(f, dict) and isinstance(f.get("path"), str)]


def diff_summary(before: dict[str, str], paths: list[str], now: dict[str, str | None]) -> str:
    """A short account of what changed in `paths` since `before`: per file +/− counts and the hunks."""
    lines: list[str] = []
    hunks: list[str] = []
    for rel in paths:
        old, new = before.get(rel), now.get(rel)
        if old == new:
            continue
        if old is None:
            lines.append(f"- {rel}: new file ({line_count(new or '')} lines)")
            continue
        if new is None:
            lines.append(f"- {rel}: deleted")
            continue
        diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"{rel} (before)", f"{rel} (now)",
                                         n=1, lineterm=""))
        added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
        removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
        lines.append(f"- {rel}: +{added} −{removed} lines")
        hunks += diff
    if not lines:
        return "Nothing changed in these files since your previous review."
    if len(hunks) > _DIFF_LINES:
        hunks = hunks[:_DIFF_LINES] + [f"[… {len(hunks) - _DIFF_LINES} more diff lines …]"]
    body = "\n".join(lines)
    return body + ("\n```diff\n" + "\n".join(hunks) + "\n```" if hunks else "")


def _since_last_review(ctx: CommandContext, budget: PromptBuilder, files: list[str]) -> str | None:
    """The previous review and what changed since, or None in the first round."""
    rel = _review_file(ctx.cmd.task_id)
    previous = quote_feedback(ctx, budget, [rel])
    if not previous:
        return None
    snap = load_json(ctx, _snapshot_file(ctx.cmd.task_id))
    saved = snap.get("files") if isinstance(snap, dict) else None
    before: dict[str, str] = {str(k): v for k, v in saved.items() if isinstance(v, str)} \
        if isinstance(saved, dict) else {}
    paths = list(dict.fromkeys([*before, *files]))
    now = {p: read_project_text(ctx, p) for p in paths}
    return ("## Your previous review of this task\n" + previous +
            "\n## What changed since then\n" + diff_summary(before, paths, now) +
            "\nDo not repeat a finding that these changes addressed.\n")


def _save_snapshot(ctx: CommandContext, files: list[str]) -> None:
    """What this review saw, for the next round's diff (the agent's own files, not an artifact)."""
    saved: dict[str, str] = {}
    used = 0
    for rel in files:
        text = read_project_text(ctx, rel, max_bytes=_SNAPSHOT_BYTES)
        if text is None or used + len(text) > _SNAPSHOT_BYTES:
            continue
        saved[rel] = text
        used += len(text)
    try:
        ctx.workspace.write_atomic(_snapshot_file(ctx.cmd.task_id), orjson.dumps({"files": saved}), policy=AGENT)
    except (AgentError, OSError) as exc:
        ctx.audit.record("review_snapshot_failed", task_id=ctx.cmd.task_id, error=str(exc))


def _cite(ctx: CommandContext, finding: dict[str, Any]) -> tuple[str | None, int | None]:
    """(path as the workspace knows it or None, its line count) for a finding."""
    rel = str(finding.get("path", "")).strip().removeprefix("./")
    if not rel or bookkeeping_reason(rel) is not None:
        return None, None
    text = read_project_text(ctx, rel)
    return (rel, line_count(text)) if text is not None else (None, None)


def grounding_errors(ctx: CommandContext, findings: list[dict[str, Any]]) -> dict[int, str]:
    """Each ungrounded finding's index with the exact reason."""
    errors: dict[int, str] = {}
    for i, f in enumerate(findings):
        rel, count = _cite(ctx, f)
        if rel is None:
            errors[i] = f"findings[{i}] cites {f.get('path')!r}, which is not a file of the project"
            continue
        line = f.get("line")
        if isinstance(line, int) and line > 0 and count is not None and line > count:
            errors[i] = f"findings[{i}] cites {rel} line {line}, but {rel} has {count} lines"
    return errors


def _rules(ctx: CommandContext, shown: list[str]):  # type: ignore[no-untyped-def]
    def check(answer: dict[str, Any]) -> None:
        for f in answer["findings"]:
            if isinstance(f.get("path"), str):
                f["path"] = f["path"].strip().removeprefix("./")
        errors = grounding_errors(ctx, answer["findings"])
        if errors:
            files = ", ".join(shown[:15]) or "(none)"
            raise InvalidAnswer("; ".join(errors.values()) + f". Cite only files quoted above ({files}), and only "
                                "line numbers shown in them, or leave `line` out.")
    return check


def _salvage(ctx: CommandContext):  # type: ignore[no-untyped-def]
    def salvage(answer: dict[str, Any]) -> dict[str, Any] | None:
        errors = grounding_errors(ctx, answer["findings"])
        kept: list[dict[str, Any]] = []
        lines_dropped = 0
        for i, f in enumerate(answer["findings"]):
            if i not in errors:
                kept.append(f)
            elif _cite(ctx, f)[0] is not None:  # the file exists: keep the finding, lose the line
                kept.append({k: v for k, v in f.items() if k != "line"})
                lines_dropped += 1
        ctx.log("warn", "review: ungrounded findings dropped after the repairs",
                findings_dropped=len(answer["findings"]) - len(kept), lines_dropped=lines_dropped,
                reasons=list(errors.values())[:5])
        if answer["status"] == "changes_requested" and not kept:
            return None
        return {**answer, "findings": kept}
    return salvage


def _unresolved(findings: list[dict[str, Any]]) -> list[str]:
    out = []
    for f in findings:
        where = f"{f.get('path')}:{f['line']}" if isinstance(f.get("line"), int) and f["line"] > 0 else str(f.get("path"))
        out.append(f"{where} {str(f.get('comment', ''))[:200]}")
    return out


def _tests_now(ctx: CommandContext) -> dict[str, Any] | None:
    """The test command's result on the code under review: the evidence the verdict should rest on."""
    if not ctx.settings.test_command:
        return None
    try:
        return test_workspace(ctx)
    except AgentError as exc:  # no boundary to run commands in: review without the evidence
        ctx.log("warn", "review: the tests could not be run", code=exc.code, reason=exc.message[:300])
        return None


def handle(ctx: CommandContext) -> Outcome:
    cmd = ctx.cmd
    limit = ctx.settings.max_review_rounds
    round_no = current_round(ctx)
    if round_no > limit:  # e.g. the limit was lowered between runs of the same loop
        raise end_loop(ReviewLoopLimit, ctx, round_no - 1, limit, "--max-review-rounds",
                       _unresolved(_previous_findings(ctx)))
    earlier = verdict_on_same_code(ctx, "review") if round_no > 1 else None
    if earlier and earlier["status"] == "approved" and enabled(ctx, "approval_stands_on_same_code"):
        return _approval_stands(ctx, round_no, earlier["round"])
    budget = PromptBuilder(ctx.settings.budget)
    listing = project_files(ctx.workspace, 200)
    task_files = [p for p in cmd.inputs.get("task_files") or [] if isinstance(p, str)]
    changed = builder_files(ctx)
    named = paths_named_in([v for v in cmd.inputs.values() if isinstance(v, str)], listing)
    previous = [f["path"] for f in _previous_findings(ctx)]
    # Test files the builder did not write only without a test command: with one, their result is
    # quoted instead, at a fraction of the prompt (a test file is often the largest file of the
    # project, and a goal that names it would otherwise quote it in every round).
    tests = _tests_now(ctx)

    def shown(rel: str) -> bool:
        return tests is None or rel in changed or not is_test_path(rel)

    to_read = [p for p in dict.fromkeys([*changed, *task_files, *named, *previous])
               if shown(p) and bookkeeping_reason(p) is None and read_project_text(ctx, p, max_bytes=1) is not None]
    # Small project files as well, while they fit: a review may not know what the builder wrote
    # (no receipts when the builder ran elsewhere), and a finding can only cite what it saw.
    to_read += [p for p in small_project_files(ctx, listing, set(to_read)) if shown(p)]
    parts = [f"# Review task {cmd.task_id} (round {round_no} of at most {limit})", quote_json("Inputs", cmd.inputs),
             "## Files written by the builder\n" + ("\n".join(changed) or "(unknown)"),
             "## Files to review (with line numbers)\n" + (quote_files(ctx, budget, to_read, numbered=True)
                                                          or "(none found)")]
    checked = run_goal_examples(ctx)
    if checked:
        parts.append(examples_section(checked))
    if tests:
        parts.append(tests_section(tests))
    since = _since_last_review(ctx, budget, to_read)
    if since:
        parts.append(since)
    listed = listing_section(listing, set(to_read))
    if listed:
        parts.append(listed)
    ctx.progress(f"asking the model to review {len(to_read)} files", stage="reviewing")
    answer = obtain_answer(ctx, AnswerSpec("reviewer", "review", _rules(ctx, to_read),
                                           salvage=_salvage(ctx),
                                           plan_context={"examples": examples_for_plans(ctx, checked, to_read)}),
                           "\n".join(parts))
    data = answer.data
    review = {"task_id": cmd.task_id, "status": data["status"], "findings": data["findings"],
              "summary": data["summary"], "created_at": utc_now()}
    art = ctx.write(_review_file(cmd.task_id), orjson.dumps(review, option=orjson.OPT_INDENT_2))
    _save_snapshot(ctx, to_read)
    record_verdict(ctx, "review", data["status"], round_no)
    if data["status"] == "changes_requested" and round_no >= limit:
        raise end_loop(ReviewLoopLimit, ctx, round_no, limit, "--max-review-rounds", _unresolved(data["findings"]))
    payload = {"summary": data["summary"], "findings": data["findings"], "review_file": art.path,
               "answer_via": answer.via, "answer_form": answer.form, "round": round_no}
    cuts = report_cuts(ctx, budget)
    if cuts:
        payload["prompt_cuts"] = cuts
    return Outcome("review.completed", payload, status=data["status"])


def _approval_stands(ctx: CommandContext, round_no: int, approved_in: Any) -> Outcome:
    """The files the builder wrote are as they were when this loop's last review approved them (the
    builder's round since kept the code): that approval is the answer, without asking again."""
    findings = _previous_findings(ctx)
    summary = (f"Approved in round {approved_in}; the files the builder wrote have not changed since, so the "
               "approval stands.")
    review = {"task_id": ctx.cmd.task_id, "status": "approved", "findings": findings, "summary": summary,
              "created_at": utc_now()}
    art = ctx.write(_review_file(ctx.cmd.task_id), orjson.dumps(review, option=orjson.OPT_INDENT_2))
    applied(ctx, "approval_stands_on_same_code", round=round_no, approved_in=approved_in)
    record_verdict(ctx, "review", "approved", round_no)
    return Outcome("review.completed", {"summary": summary, "findings": findings, "review_file": art.path,
                                        "answer_via": "agent", "answer_form": "none", "round": round_no},
                   status="approved")
