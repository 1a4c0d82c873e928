"""Spec maintainer: update_spec → edits to four allowed sections, `spec_notes/<task>.json`, spec.* event.

Only `## Status`, `## Changelog`, `## Completion` and `## Open Questions` may change; any other
edit is refused with `forbidden_spec_edit` (sent back to the model for repair first).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from agent.answering.loop import AnswerSpec, obtain_answer
from agent.answering.strategies import applied, enabled
from agent.clock import utc_now
from agent.command_context import CommandContext, Outcome
from agent.errors import AgentError, ForbiddenSpecEdit, InvalidModelResponse, SpecLoopLimit
from agent.pathpolicy import AGENT
from agent.prompt import PromptBuilder
from agent.roles.goal_examples import examples_section, run_goal_examples
from agent.roles.loops import current_round, end_loop
from agent.roles.prompting import quote_feedback, quote_files, quote_json, report_cuts
from agent.roles.task_files import (
    builder_files,
    examples_for_plans,
    find_spec,
    load_json,
)
from agent.roles.verdicts import record_verdict, verdict_on_same_code
from agent.workspace import sanitize_id

__all__ = ["handle", "apply_section_edits", "ALLOWED_SECTIONS"]

ALLOWED_SECTIONS = ("Status", "Changelog", "Completion", "Open Questions")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_TOP_HEADING = re.compile(r"^#{1,2}\s")
EVENTS = {"updated": "spec.updated", "no_changes_needed": "spec.no_changes_needed",
          "changes_requested": "spec.changes_requested"}


def _canonical(section: str) -> str | None:
    name = section.strip().lstrip("#").strip().rstrip(":").strip()
    return next((a for a in ALLOWED_SECTIONS if a.lower() == name.lower()), None)


def _as_body(edit: dict[str, Any]) -> dict[str, Any]:
    """The edit's content as the body of its section: without a first line that is the section's own
    heading (`## Changelog` atop the Changelog's body: the agent writes that heading itself), and
    with a top-level heading of its own (`## Changes`) one level down, under the section. A heading
    that names another of the four sections stays, and is refused: that text belongs elsewhere."""
    content = edit.get("content")
    if not isinstance(content, str):
        return edit
    first, _, rest = content.lstrip("\n").partition("\n")
    if _HEADING.match(first) and _canonical(first) == edit["section"]:
        content = rest.lstrip("\n")
    lines = ["#" * 3 + line.lstrip("#") if _TOP_HEADING.match(line) and _canonical(line) is None else line
             for line in content.split("\n")]
    return {**edit, "content": "\n".join(lines)}


def edit_error(edit: dict[str, Any]) -> str | None:
    """Why one section edit is not allowed, or None (the schema already holds it to the four sections)."""
    if any(_TOP_HEADING.match(line) for line in edit["content"].splitlines()):
        return f"the content for {edit['section']!r} contains a top-level heading; give the section body only"
    return None


def check_edits(answer: dict[str, Any]) -> None:
    for edit in answer.get("section_edits") or []:
        why = edit_error(edit)
        if why:
            raise ForbiddenSpecEdit(why, section=edit["section"])


def _prepare(ctx: CommandContext):  # type: ignore[no-untyped-def]
    def prepare(answer: Any) -> Any:
        mend = enabled(ctx, "mend_spec_answer")
        edits = answer.get("section_edits") if isinstance(answer, dict) else None
        if mend and isinstance(edits, dict) and {"section", "content"} <= edits.keys():
            # One edit where a list of them belongs: the agent wraps it (a model repeats this slip
            # after every schema refusal, and a failed update_spec ends lorch's run).
            ctx.log("info", "spec: one section edit given without its list; taken as a list of one")
            applied(ctx, "mend_spec_answer", mended="edit_listed")
            answer = {**answer, "section_edits": [edits]}
        if isinstance(answer, dict) and isinstance(answer.get("section_edits"), list):
            # The schema names the four sections exactly (a server that enforces it lets no other
            # through); a heading's marks or another case still name one of them.
            answer = {**answer, "section_edits": [
                _as_body({**e, "section": _canonical(e["section"]) or e["section"]})
                if isinstance(e, dict) and isinstance(e.get("section"), str) else e
                for e in answer["section_edits"]]}
        # "updated" with nothing to apply is a contradiction the agent resolves itself: nothing
        # was updated, so the spec needed no change (a failure here would end a finished run).
        if mend and isinstance(answer, dict) and answer.get("status") == "updated" and not answer.get("section_edits"):
            ctx.log("info", "spec: 'updated' without section_edits taken as no_changes_needed")
            applied(ctx, "mend_spec_answer", mended="no_changes_needed")
            answer = {**answer, "status": "no_changes_needed"}
            answer.pop("section_edits", None)
        if mend and isinstance(answer, dict) and answer.get("status") == "changes_requested" \
                and not answer.get("required_changes") and isinstance(answer.get("summary"), str) \
                and answer["summary"].strip():
            # Changes requested without saying which: the summary says it (a repair tends to get the
            # same answer back, and a failure would end the run).
            ctx.log("info", "spec: changes_requested without required_changes; the summary taken as the change")
            applied(ctx, "mend_spec_answer", mended="summary_as_change")
            answer = {**answer, "required_changes": [answer["summary"].strip()]}
        return answer
    return prepare


class _Answers:
    """The answers seen for one command: the spec's check, and the best one to fall back on.

    After the repairs the agent falls back on the earlier answer whose allowed edits it can apply,
    dropping the forbidden ones. An answer none of whose edits is allowed is not salvaged: a model
    that kept breaking the rules (e.g. editing a section the spec does not have) gives no verdict
    worth a loop back to the builder, and the agent records the Changelog entry itself.
    """

    def __init__(self, ctx: CommandContext, spec: str | None) -> None:
        self.ctx = ctx
        self.spec = spec
        self.with_edits: dict[str, Any] | None = None  # the last answer with at least one allowed edit

    def check(self, answer: dict[str, Any]) -> None:
        edits = answer.get("section_edits") or []
        if edits and self.spec is None:
            raise ForbiddenSpecEdit("there is no spec file to edit; answer without section_edits "
                                    "(no_changes_needed or changes_requested)")
        if self.spec is not None and any(edit_error(e) is None for e in edits):
            self.with_edits = answer
        check_edits(answer)

    def salvage(self, answer: dict[str, Any]) -> dict[str, Any] | None:
        if not answer.get("section_edits") and self.with_edits is not None and answer is not self.with_edits:
            self.ctx.log("info", "spec: falling back on the earlier answer with edits it may make")
            answer = self.with_edits
        edits = answer.get("section_edits") or []
        kept = [e for e in edits if edit_error(e) is None] if self.spec is not None else []
        if not kept:  # nothing of it passed the rules: its verdict is no better (the agent records the change)
            return None
        dropped = [str(e["section"]) for e in edits if e not in kept]
        self.ctx.log("warn", "spec: edits still not allowed after the repairs were dropped", sections=dropped[:10])
        return {**answer, "section_edits": kept}


def apply_section_edits(text: str, edits: list[dict[str, Any]]) -> str:
    """Replace each allowed `## <section>` body (append the section when missing)."""
    lines = text.splitlines()
    for edit in edits:
        name = _canonical(edit["section"])
        assert name is not None
        body = edit["content"].strip("\n").splitlines()
        start = next((i for i, ln in enumerate(lines) if (m := _HEADING.match(ln)) and len(m.group(1)) == 2
                      and m.group(2).strip().lower() == name.lower()), None)
        if start is None:
            lines += ["", f"## {name}", "", *body]
            continue
        end = next((j for j in range(start + 1, len(lines)) if (m := _HEADING.match(lines[j]))
                    and len(m.group(1)) <= 2), len(lines))
        lines[start + 1:end] = ["", *body, ""] if end < len(lines) else ["", *body]
    return "\n".join(lines) + "\n"


def handle(ctx: CommandContext) -> Outcome:
    cmd = ctx.cmd
    limit = ctx.settings.max_spec_rounds
    round_no = current_round(ctx)
    safe = sanitize_id(cmd.task_id)
    if round_no > limit:
        raise end_loop(SpecLoopLimit, ctx, round_no - 1, limit, "--max-spec-rounds", _previous_changes(ctx))
    spec = find_spec(ctx)
    earlier = verdict_on_same_code(ctx, "spec") if round_no > 1 else None
    if earlier and earlier["status"] == "changes_requested" and enabled(ctx, "spec_request_not_repeated"):
        return _request_recorded(ctx, spec, earlier["round"])
    budget = PromptBuilder(ctx.settings.budget)
    parts = [f"# Update the spec for task {cmd.task_id}", quote_json("Inputs", cmd.inputs),
             "## Spec file\n" + (quote_files(ctx, budget, [spec], AGENT) if spec else "(no spec file found)"),
             "## Review\n" + (quote_feedback(ctx, budget, [f"reviews/{safe}.json"]) or "(none)"),
             "## Files written by the builder\n" + ("\n".join(builder_files(ctx)) or "(unknown)")]
    if round_no > 1:
        parts.append("## Your previous notes for this task\n"
                     + (quote_feedback(ctx, budget, [f"spec_notes/{safe}.json"]) or "(none)")
                     + f"\nThis is round {round_no} of at most {limit}: ask for changes again only if the "
                       "implementation still contradicts the spec.")
    checked = run_goal_examples(ctx)
    if checked:
        parts.append(examples_section(checked))
    ctx.progress(f"asking the model about the spec {spec or '(none found)'}", stage="updating_spec")
    seen = _Answers(ctx, spec)
    try:
        answer = obtain_answer(ctx, AnswerSpec("spec_maintainer", "spec", seen.check, _prepare(ctx), seen.salvage,
                                               plan_context={"examples": examples_for_plans(ctx, checked, [])}),
                               "\n".join(parts))
    except (InvalidModelResponse, ForbiddenSpecEdit) as exc:  # no answer, or none that kept to the sections
        if not enabled(ctx, "spec_changelog_by_agent"):
            raise
        return _recorded_by_the_agent(ctx, spec, exc)
    data = answer.data
    edits = data.get("section_edits") or []
    edited: list[str] = []
    if edits and spec is not None:
        new_text = apply_section_edits(ctx.workspace.read_text(spec), edits)
        # The spec maintainer's exception: the one spec file it found (or was given) to edit.
        ctx.write(spec, new_text, policy=ctx.policy.allowing(ctx.workspace.normalize(spec)))
        edited = [str(_canonical(e["section"])) for e in edits]
    notes = {"task_id": cmd.task_id, "status": data["status"], "summary": data["summary"],
             "required_changes": data.get("required_changes", []), "edited_sections": edited,
             "spec_file": spec, "created_at": utc_now()}
    notes_art = ctx.write(f"spec_notes/{safe}.json", orjson.dumps(notes, option=orjson.OPT_INDENT_2))
    record_verdict(ctx, "spec", data["status"], round_no)
    if data["status"] == "changes_requested" and round_no >= limit:
        raise end_loop(SpecLoopLimit, ctx, round_no, limit, "--max-spec-rounds", data.get("required_changes", []))
    payload: dict[str, Any] = {"summary": data["summary"], "edited_sections": edited,
                               "notes_file": notes_art.path, "answer_via": answer.via, "answer_form": answer.form}
    if data.get("required_changes"):
        payload["required_changes"] = data["required_changes"]
    cuts = report_cuts(ctx, budget)
    if cuts:
        payload["prompt_cuts"] = cuts
    return Outcome(EVENTS[data["status"]], payload)


def _review_verdict(ctx: CommandContext) -> str:
    review = load_json(ctx, f"reviews/{sanitize_id(ctx.cmd.task_id)}.json")
    return str((review if isinstance(review, dict) else {}).get("status") or "not recorded")


def _recorded_by_the_agent(ctx: CommandContext, spec: str | None, exc: AgentError) -> Outcome:
    """No usable answer from the model: the agent records what it knows (the files the builder wrote and
    the review's verdict) in the Changelog itself. The spec's bookkeeping sections are all this role
    may touch, and a run whose code was built and reviewed should not end over how a note is phrased."""
    files = builder_files(ctx)
    entry = (f"- {ctx.cmd.task_id}: files written by the builder: {', '.join(files) if files else 'none recorded'}; "
             f"review {_review_verdict(ctx)}. (Recorded by the agent: the model gave no usable spec answer.)")
    applied(ctx, "spec_changelog_by_agent", reason=exc.message[:300])
    return _agent_entry(ctx, spec, "Changelog", entry, "Changelog entry recorded by the agent; the model gave "
                        f"no usable answer ({exc.message[:200]})")


def _request_recorded(ctx: CommandContext, spec: str | None, asked_in: Any) -> Outcome:
    """This loop's last spec answer asked for changes, and the builder's round since kept the code (under
    lorch, its tests passed and the review since approved it): asking again would put the same question
    to the model, so the request is recorded as an open question and the run goes on."""
    asked = _previous_changes(ctx)
    entry = (f"- {ctx.cmd.task_id}: changes asked for in round {asked_in} and not made (the builder kept the "
             f"code; review {_review_verdict(ctx)}): {'; '.join(asked)[:600] or '(none named)'}")
    applied(ctx, "spec_request_not_repeated", asked_in=asked_in)
    return _agent_entry(ctx, spec, "Open Questions", entry, f"The request for changes of round {asked_in} is "
                        "recorded under Open Questions: the builder kept the code since.")


def _agent_entry(ctx: CommandContext, spec: str | None, section: str, entry: str, summary: str) -> Outcome:
    """The agent's own answer: `entry` appended to the spec's `section`, and notes saying so."""
    edited: list[str] = []
    if spec is not None:
        text = ctx.workspace.read_text(spec)
        body = _section_body(text, section)
        new_text = apply_section_edits(text, [{"section": section, "content": (body + "\n" + entry).strip("\n")}])
        ctx.write(spec, new_text, policy=ctx.policy.allowing(ctx.workspace.normalize(spec)))
        edited = [section]
    status = "updated" if edited else "no_changes_needed"
    notes = {"task_id": ctx.cmd.task_id, "status": status, "summary": summary, "required_changes": [],
             "edited_sections": edited, "spec_file": spec, "created_at": utc_now(), "answer_via": "agent"}
    notes_art = ctx.write(f"spec_notes/{sanitize_id(ctx.cmd.task_id)}.json",
                          orjson.dumps(notes, option=orjson.OPT_INDENT_2))
    return Outcome(EVENTS[status], {"summary": summary, "edited_sections": edited, "notes_file": notes_art.path,
                                    "answer_via": "agent", "answer_form": "none"})


def _section_body(text: str, name: str) -> str:
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if (m := _HEADING.match(ln)) and len(m.group(1)) == 2
                  and m.group(2).strip().lower() == name.lower()), None)
    if start is None:
        return ""
    end = next((j for j in range(start + 1, len(lines)) if (m := _HEADING.match(lines[j])) and len(m.group(1)) <= 2),
               len(lines))
    return "\n".join(lines[start + 1:end]).strip("\n")


def _previous_changes(ctx: CommandContext) -> list[str]:
    notes = load_json(ctx, f"spec_notes/{sanitize_id(ctx.cmd.task_id)}.json")
    changes = notes.get("required_changes") if isinstance(notes, dict) else None
    return [str(c) for c in changes or []]
