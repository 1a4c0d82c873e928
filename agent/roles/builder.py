"""Builder: implement / implement_changes → files written, tests run, `builder.completed`.

The prompt carries what the builder must see to change code rather than guess it: the spec, the
files the task names (goal, inputs, `task_files`, expected outputs), for `implement_changes` the
review and spec notes and every file they cite, then small project files while they fit, and a
listing of the project's own files (never lorch's bookkeeping).
"""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from typing import Any

from agent.answering.answer_form import builder_writes_text
from agent.answering.loop import (
    Answer,
    AnswerSpec,
    InvalidAnswer,
    Narrowing,
    StartOver,
    extract_json,
    obtain_answer,
    strings_in,
)
from agent.answering.strategies import applied, enabled
from agent.command_context import CommandContext, Outcome
from agent.edits.changes import (
    EDIT_SHAPE,
    FILE_SHAPE,
    PROSE_SUFFIXES,
    FileWrite,
    check_change_entries,
    is_test_path,
    named_definitions,
    planned_writes,
    unchanged_code,
)
from agent.errors import AgentError, InvalidModelResponse, ShuttingDown
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
from agent.roles.test_ledger import TestLedger
from agent.roles.testrun import quoted_output, test_workspace
from agent.workspace import sanitize_id

__all__ = ["handle", "feedback_files", "builder_prompt"]

_TEST_TAIL = 2000
_PATH_ALIASES = ("file", "filename", "file_path", "filepath", "name")
_FILE_ALIASES: dict[str, tuple[str, ...]] = {"path": _PATH_ALIASES, "content": ("contents", "code", "text", "body", "source")}
_EDIT_ALIASES: dict[str, tuple[str, ...]] = {"path": _PATH_ALIASES, "old": ("old_string", "old_text", "search", "find", "from"),
                 "new": ("new_string", "new_text", "replace", "replacement", "to")}


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
    """The builder's user message; `also` adds files it must see (what it just wrote, in a test repair)."""
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


def _prepare(answer: Any) -> Any:
    """Precise messages for the shapes small models get wrong; unambiguous aliases are accepted."""
    if not isinstance(answer, dict):
        return answer
    files = answer.get("files")
    if isinstance(files, list):
        if any(isinstance(f, str) for f in files):
            shown = ", ".join(repr(f) for f in files if isinstance(f, str))[:200]
            raise InvalidAnswer(f"`files` must be a list of objects like {FILE_SHAPE}, one per file you write, "
                                f"with its whole new content; you gave plain strings ({shown}). Do not list the "
                                f"project's files: only the ones you change. For a change inside an existing file "
                                f"use edits: [{EDIT_SHAPE}].")
        answer["files"] = [_alias(f, _FILE_ALIASES) for f in files]
    if isinstance(answer.get("edits"), list):
        answer["edits"] = [_alias(e, _EDIT_ALIASES) for e in answer["edits"]]
    return answer


def _alias(entry: Any, aliases: dict[str, tuple[str, ...]]) -> Any:
    """`entry` with each missing key taken from its one alias present (left alone when ambiguous)."""
    if not isinstance(entry, dict):
        return entry
    out = dict(entry)
    for key, names in aliases.items():
        present = [a for a in names if a in out]
        if key not in out and len(present) == 1:
            out[key] = out.pop(present[0])
    return out


def _rules(ctx: CommandContext):  # type: ignore[no-untyped-def]
    def check(answer: dict[str, Any]) -> None:
        writes = planned_writes(ctx.workspace, answer)
        for w in writes:  # the role's path policy and the secret guard, while the model can still repair
            ctx.workspace.check_write(w.path, w.content, policy=ctx.policy)
        if ctx.cmd.action == "implement" and not writes and not ctx.artifacts and not answer.get("no_changes_reason"):
            raise InvalidAnswer("implement needs at least one change: give `files` (new files) or `edits` "
                                f"(like [{EDIT_SHAPE}]), or say in `no_changes_reason` why nothing needs to change")
        same = unchanged_code(ctx.workspace, writes) if ctx.cmd.action == "implement" and not _about_prose(ctx) else []
        if same:
            goal = " ".join(strings_in(ctx.cmd.inputs))
            shown = "".join(f"\n{d}" for d in named_definitions(ctx.workspace, same, goal))
            raise StartOver(f"this change leaves what {', '.join(same)} does exactly as it was (only docstrings "
                            "or layout differ), so the task is not done. "
                            + (f"The goal names this code, as it is now:{shown}\nWork out step by step what it "
                               "returns for the values in the goal; where that differs from what the goal "
                               "says, change it." if shown else
                               "Read the goal again and change the code it names so that it does what the goal "
                               "asks"))
    return check


_PROSE_GOAL = re.compile(r"docstring|comment|documentation|format|typo|wording|style|whitespace", re.I)


def _about_prose(ctx: CommandContext) -> bool:
    """A goal about docs or layout: a change that leaves the code's behaviour as it was may be the task."""
    return _PROSE_GOAL.search(" ".join(strings_in(ctx.cmd.inputs))) is not None


def _salvage(ctx: CommandContext, *, only_prose: bool = False):  # type: ignore[no-untyped-def]
    """The answer without the entries that cannot be applied, or None when none can or none failed.

    `only_prose`: only when every failing entry is a prose file's — the salvage taken at the second
    same error (right code beside a failing edit of a prose file such as PLAN.md is worth keeping;
    the whole-files form asked for next may give a wrong rewrite instead).
    """
    def salvage(answer: dict[str, Any]) -> dict[str, Any] | None:
        failed = check_change_entries(ctx.workspace, answer)
        if not failed:
            return None
        files, edits = answer.get("files") or [], answer.get("edits") or []
        if only_prose:
            entries = {**{f"files[{i}]": f for i, f in enumerate(files)}, **{f"edits[{i}]": e for i, e in enumerate(edits)}}
            if not all(str(entries.get(name, {}).get("path", "")).lower().endswith(PROSE_SUFFIXES) for name in failed):
                return None
        kept = dict(answer)
        kept["files"] = [f for i, f in enumerate(files) if f"files[{i}]" not in failed]
        kept["edits"] = [e for i, e in enumerate(edits) if f"edits[{i}]" not in failed]
        if not kept["files"] and not kept["edits"]:
            return None
        ctx.log("warn", "builder answer: dropped the changes that failed after the repairs",
                dropped=sorted(failed), reasons=[m[:200] for m in failed.values()][:5])
        return kept
    return salvage


def whole_files_form() -> Narrowing:
    """The builder's answer with whole files only: what a small model gets right when its edits keep missing.

    A small model may copy the worked example's `old` text into every edit, the same answer after
    each repair; with edits out of the schema (the server enforces response_format token by token)
    it has to write the file.
    """
    from agent.protocol import validator

    schema = copy.deepcopy(validator("answers/builder.json").schema)
    schema["properties"].pop("edits", None)
    schema["properties"]["files"]["minItems"] = 1
    schema["required"] = ["summary", "files"]

    def note(rejected: str) -> str:
        # The real file names, never a placeholder: small models copy `src/app.py` and
        # "<the whole new file>" from an example shape verbatim.
        paths = _answer_paths(rejected) or ["the file"]
        shown = ", ".join(f'{{"path": "{p}", "content": <all of {p}, with your change>}}' for p in paths[:3])
        return ("Your edits could not be applied, so now give no edits: give each file you change whole in "
                f"`files`: [{shown}]. For an existing file copy its current content from above and change only "
                "what the task needs; keep every other line.")

    return Narrowing(schema, note, "whole files only (edits left out of the schema)")


def _answer_paths(text: str) -> list[str]:
    """The paths a (rejected) JSON answer wrote, in order, for a note that names them."""
    try:
        data = extract_json(text)
    except InvalidAnswer:
        return []
    entries = [*(data.get("edits") or []), *(data.get("files") or [])] if isinstance(data, dict) else []
    paths = [e["path"] for e in entries if isinstance(e, dict) and isinstance(e.get("path"), str)]
    return [p for p in dict.fromkeys(paths) if bookkeeping_reason(p) is None and len(p) < 200]


def _test_repair(ctx: CommandContext, spec: AnswerSpec, tests: dict[str, Any]) -> Answer | None:
    """One more answer, shown the failing test output and the files as they are now; None if none came.

    lorch fails the run on the first `builder.completed` whose tests fail, so the builder's only
    second chance is within the command.
    """
    budget = PromptBuilder(ctx.settings.budget)
    user = builder_prompt(ctx, budget, [a.path for a in ctx.artifacts])
    tail = quoted_output(tests, _TEST_TAIL)
    user += (f"\n## The tests failed after your change\nCommand: {tests.get('command')}\n```\n{tail}\n```\n"
             "Fix the code so that the tests pass; the files above show your change. Do not weaken the tests "
             "that were there before; a test you added for this task may be corrected only where it "
             "contradicts the goal.")
    ctx.progress("tests failed; asking the model to fix them", stage="implementing", progress=0.6)
    try:
        return obtain_answer(ctx, replace(spec, anchors=tuple(budget.whole.items())), user)
    except ShuttingDown:
        raise
    except AgentError as exc:  # keep the real result of the last change rather than a new failure
        ctx.log("warn", "test repair failed", code=exc.code, reason=exc.message[:300])
        return None


def _write_all(ctx: CommandContext, writes: list[FileWrite], ledger: TestLedger | None = None) -> None:
    notes = [n for w in writes for n in w.notes]
    if notes:  # an edit placed by near match, definitions merged: say where, so a reviewer can check it
        ctx.log("info", "changes placed by the agent", notes=notes[:10])
    for write in writes:
        if ledger is not None:
            ledger.note(write.path)
        ctx.write(write.path, write.content)


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
    """Files as text, in rounds against the tests (builder_rounds.py): the default form."""
    budget = PromptBuilder(ctx.settings.budget)
    must_act = ctx.cmd.action == "implement" and not _about_prose(ctx)
    # What the goal's own examples return today guides the first rounds (it never judges one); once a
    # round has written files, those results are stale.
    checked = [r for r in run_goal_examples(ctx) if r.get("path")] if ctx.settings.test_command else []
    today = "\n" + examples_section(checked) + "\n" if any(not r["held"] for r in checked) else ""

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


def _answered(ctx: CommandContext, spec: AnswerSpec, user: str) -> Answer | Outcome:
    """The answer loop's answer (JSON or Lua plan), or the code kept as it is when none came."""
    ctx.progress("asking the model for a plan", stage="planning", progress=0.1)
    try:
        return obtain_answer(ctx, spec, user)
    except InvalidModelResponse as exc:
        kept = _kept_as_is(ctx, exc)
        if kept is None:
            raise
        return kept


def handle(ctx: CommandContext) -> Outcome:
    if ctx.settings.test_command:  # refuse before spending a model call on work we could not test
        from agent.sandbox import ensure_commands_allowed

        ensure_commands_allowed("the test command")
    if builder_writes_text(ctx.settings.answers, ctx.model):
        return _handle_in_rounds(ctx)
    budget = PromptBuilder(ctx.settings.budget)
    user = builder_prompt(ctx, budget)  # first: it fills budget.whole, the files an edit may copy
    spec = AnswerSpec("builder", "planning", _rules(ctx), _prepare, _salvage(ctx), guard_answer=False,
                      narrow=whole_files_form(), salvage_early=_salvage(ctx, only_prose=True),
                      anchors=tuple(budget.whole.items()))
    answer = _answered(ctx, spec, user)
    if isinstance(answer, Outcome):
        return answer
    ledger = TestLedger(ctx)
    _write_all(ctx, planned_writes(ctx.workspace, answer.data), ledger)
    tests = test_workspace(ctx)
    repairs = 0
    while tests["status"] == "fail" and repairs < ctx.settings.test_repairs and ctx.seconds_left() > 5:
        repairs += 1
        fixed = _test_repair(ctx, spec, tests)
        if fixed is None:
            break
        writes = planned_writes(ctx.workspace, fixed.data)
        if not writes and not fixed.plan:
            break
        answer = fixed
        _write_all(ctx, writes, ledger)
        tests = test_workspace(ctx)
    tests, taken_out, reverted = ledger.settle(tests, lambda: test_workspace(ctx))
    payload: dict[str, Any] = {"summary": answer.data["summary"], "tests": tests,
                               "files": [a.path for a in ctx.artifacts], "answer_via": answer.via,
                               "answer_form": answer.form}
    if taken_out:
        payload["tests_taken_out"] = taken_out
    if reverted:
        payload["changes_reverted"] = reverted
        payload["summary"] = ("Change withdrawn: it failed the project's tests after the repairs, which pass on the "
                              "code as it was. The model's summary: " + str(answer.data["summary"])[:300])
    if repairs:
        payload["test_repairs"] = repairs
    if answer.data.get("no_changes_reason") and not ctx.artifacts:
        payload["no_changes_reason"] = answer.data["no_changes_reason"]
    cuts = report_cuts(ctx, budget)
    if cuts:
        payload["prompt_cuts"] = cuts
    return Outcome("builder.completed", payload, status="success")
