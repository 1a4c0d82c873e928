"""Builder: implement / implement_changes → files written, tests run, `builder.completed`.

The prompt carries what the builder must see to change code rather than guess it: the spec, the
files the task names (goal, inputs, `task_files`, expected outputs), for `implement_changes` the
review and spec notes and every file they cite, then small project files while they fit, and a
listing of the project's own files (never lorch's bookkeeping). The files come back as text, in
rounds against the project's tests (`builder_rounds.py`), in every answer form.
"""

from __future__ import annotations

import re
from typing import Any

from agent.answering.answer_spec import strings_in
from agent.answering.strategies import applied, enabled
from agent.command_context import CommandContext, Outcome
from agent.edits.changes import is_test_path
from agent.errors import InvalidModelResponse
from agent.project_files import bookkeeping_reason, new_paths_named, paths_named_in, project_files
from agent.prompt import PromptBuilder
from agent.roles.builder_rounds import build_in_rounds
from agent.roles.goal_examples import examples_section, run_goal_examples
from agent.roles.prompting import (
    listing_section,
    quote_feedback,
    quote_files,
    quote_json,
    read_project_text,
    report_cuts,
    small_project_files,
)
from agent.roles.task_files import builder_files, find_spec, load_json
from agent.roles.testrun import test_workspace
from agent.workspace import sanitize_id

__all__ = ["handle", "feedback_files", "builder_prompt"]



def feedback_files(task_id: str) -> list[str]:
    """Where lorch's loop leaves feedback for a task: the review and the spec notes."""
    safe = sanitize_id(task_id)
    return [f"reviews/{safe}.json", f"spec_notes/{safe}.json"]



def _cited_paths(ctx: CommandContext, rel: str) -> list[str]:
    """Paths a feedback file points at: review findings' paths (the files under review)."""
    data = load_json(ctx, rel)
    findings = data.get("findings") if isinstance(data, dict) else None
    return [f["path"] for f in findings or [] if isinstance(f, dict) and isinstance(f.get("path"), str)]


def _must_see(ctx: CommandContext, listing: list[str], spec: str | None) -> list[str]:
    """The files the builder must see in full, in order, without the spec."""
    cmd = ctx.cmd
    named = [p for p in cmd.inputs.get("task_files") or [] if isinstance(p, str)]
    named += [o.path for o in cmd.expected_outputs]
    named += paths_named_in(list(strings_in(cmd.inputs)), listing)
    if cmd.action == "implement_changes":
        for rel in feedback_files(cmd.task_id):
            named += _cited_paths(ctx, rel)
            named += paths_named_in(list(strings_in(load_json(ctx, rel))), listing)
        named += builder_files(ctx)
    seen: list[str] = []
    for rel in named:
        rel = rel.removeprefix("./")
        if rel != spec and rel not in seen and bookkeeping_reason(rel) is None \
                and read_project_text(ctx, rel, max_bytes=1) is not None:
            seen.append(rel)
    return seen


def files_to_change(ctx: CommandContext) -> list[str]:
    """The files the builder's prompt names to change or create, in its order (tests left out)."""
    listing = project_files(ctx.workspace, 200)
    named = [*_must_see(ctx, listing, find_spec(ctx)), *new_paths_named(list(strings_in(ctx.cmd.inputs)), listing)]
    return [p for p in named if not is_test_path(p)]


def builder_prompt(ctx: CommandContext, budget: PromptBuilder, also: list[str] | None = None) -> str:
    """The builder's user message; `also` adds files it must see (what the rounds wrote so far)."""
    cmd = ctx.cmd
    listing = project_files(ctx.workspace, 200)
    spec = find_spec(ctx)
    must = _must_see(ctx, listing, spec)
    must += [p for p in also or [] if p not in must and p != spec and bookkeeping_reason(p) is None]
    parts = [f"# Task {cmd.task_id}: {cmd.action}"]
    if isinstance(cmd.inputs.get("goal"), str):
        parts.append(f"## Goal\n{cmd.inputs['goal']}\n")
    if set(cmd.inputs) - {"goal"}:  # the goal alone is quoted once: a small model echoes what it sees twice
        parts.append(quote_json("Inputs", cmd.inputs))
    if spec:
        parts.append("## Spec\n" + quote_files(ctx, budget, [spec]))
    # Existing tests are shown apart: under "files to change" a small model gives them back whole,
    # thousands of tokens the agent must refuse anyway (a project's tests stay as they are).
    small = small_project_files(ctx, listing, {*must, *([spec] if spec else [])})
    tests = [p for p in [*must, *small] if is_test_path(p) and p in listing and p not in (also or [])]
    must, small = [p for p in must if p not in tests], [p for p in small if p not in tests]
    if small:
        parts.append("## Other project files (for reference: give one back only if you change it)\n"
                     + quote_files(ctx, budget, small))
    if cmd.action == "implement_changes":
        parts.append("## Feedback to address\n" + (quote_feedback(ctx, budget, feedback_files(cmd.task_id))
                                                   or "(no review or spec notes found)"))
    if tests:
        parts.append("## The project's tests (your code must pass them; never give them back)\n"
                     + quote_files(ctx, budget, tests))
    parts.append("## Files to change (current content)\n" + (quote_files(ctx, budget, must)
                                                             or "(none of the named files exist yet)"))
    new_files = new_paths_named(list(strings_in(cmd.inputs)), listing)
    if new_files:
        parts.append("## Files the task names that do not exist yet (create them)\n" + "\n".join(new_files))
    listed = listing_section(listing, {*must, *small, *tests, *([spec] if spec else [])})
    return "\n".join([*parts, listed] if listed else parts)


_PROSE_GOAL = re.compile(r"docstring|comment|documentation|format|typo|wording|style|whitespace", re.I)


def _about_prose(ctx: CommandContext) -> bool:
    """A goal about docs or layout: a change that leaves the code's behaviour as it was may be the task."""
    return _PROSE_GOAL.search(" ".join(strings_in(ctx.cmd.inputs))) is not None


def _kept_as_is(ctx: CommandContext, exc: InvalidModelResponse) -> Outcome | None:
    """`implement_changes` without any applicable answer, but with code whose tests pass: the code
    stays as it is and the reviewer looks again (the agent bounds that loop), instead of a failed
    command that fails lorch's whole run: a reviewer may ask for changes to right code by restating
    the goal, leaving the builder nothing to change. None when the tests do not pass (or none
    are configured): then the failure stands."""
    if ctx.cmd.action != "implement_changes" or not ctx.settings.test_command or ctx.artifacts \
            or not enabled(ctx, "keep_passing_code"):
        return None
    tests = test_workspace(ctx)
    if tests["status"] != "pass":
        return None
    applied(ctx, "keep_passing_code")
    why = (f"no applicable change for the review's findings came from the model ({exc.message[:300]}); "
           "the code is left as it is, and its tests pass")
    ctx.log("warn", "builder: no applicable change; the code is left as it is", reason=exc.message[:300])
    return Outcome("builder.completed", {"summary": "No change made: " + why, "tests": tests, "files": [],
                                         "answer_via": "none", "answer_form": "none", "no_changes_reason": why},
                   status="success")


def _goal_test_path(ctx: CommandContext) -> str:
    """Where a test of this task goes, if one is written first (test_first.py): beside the project's
    tests, named after the task."""
    listing = project_files(ctx.workspace, 500)
    folders = [p.rpartition("/")[0] for p in listing if is_test_path(p) and p.endswith(".py")]
    folder = folders[0] if folders else "tests"
    stem = "test_task_" + re.sub(r"[^a-z0-9]+", "_", ctx.cmd.task_id.lower()).strip("_")
    path, n = f"{folder}/{stem}.py".lstrip("/"), 1
    while path in listing:
        n += 1
        path = f"{folder}/{stem}_{n}.py".lstrip("/")
    return path


def _handle_in_rounds(ctx: CommandContext) -> Outcome:
    """Files as text, in rounds against the tests (builder_rounds.py): the builder's only way."""
    budget = PromptBuilder(ctx.settings.budget)
    # What the goal's own examples return today guides the first rounds (it never judges one); once a
    # round has written files, those results are stale.
    checked = [r for r in run_goal_examples(ctx) if r.get("path")] if ctx.settings.test_command else []
    failing = any(not r["held"] for r in checked)
    today = "\n" + examples_section(checked) + "\n" if failing else ""
    # An example that fails on the code as it is shows the behaviour must change, whatever words the
    # goal uses ("as its docstring says, it must ignore case").
    must_act = ctx.cmd.action == "implement" and (failing or not _about_prose(ctx))

    def prompt_for(round_budget: PromptBuilder, written: list[str]) -> str:
        nonlocal budget
        budget = round_budget
        return builder_prompt(ctx, round_budget, written) + ("" if written else today)
    try:
        done = build_in_rounds(ctx, prompt_for, ctx.settings.builder_rounds, must_act=must_act,
                               test_first=_goal_test_path(ctx) if must_act else "", targets=files_to_change(ctx))
    except InvalidModelResponse as exc:
        kept = _kept_as_is(ctx, exc)
        if kept is None:
            raise
        return kept
    payload: dict[str, Any] = {"summary": done.summary or "Changed " + ", ".join(a.path for a in ctx.artifacts),
                               "tests": done.tests, "files": [a.path for a in ctx.artifacts], "answer_via": "text",
                               "answer_form": done.form, "rounds": done.rounds, "round_log": done.log}
    if done.tests_taken_out:
        payload["tests_taken_out"] = done.tests_taken_out
    if done.withdrawn:
        payload["changes_reverted"] = {"files": payload["files"]}
        payload["summary"] = ("Change withdrawn: the tests did better on the code as it was. The model's summary: "
                              + payload["summary"][:300])
    cuts = report_cuts(ctx, budget)
    if cuts:
        payload["prompt_cuts"] = cuts
    return Outcome("builder.completed", payload, status="success")


def handle(ctx: CommandContext) -> Outcome:
    if ctx.settings.test_command:  # refuse before spending a model call on work we could not test
        from agent.sandbox import ensure_commands_allowed

        ensure_commands_allowed("the test command")
    return _handle_in_rounds(ctx)
