"""Spec maintainer: update_spec → edits to four allowed sections, `spec_notes/<task>.json`, spec.* event.

Only `## Status`, `## Changelog`, `## Completion` and `## Open Questions` may change; any other
edit is refused with `forbidden_spec_edit` (sent back to the model for repair first).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from agent.answering.loop import AnswerSpec, InvalidAnswer, obtain_answer
from agent.answering.strategies import applied, enabled
from agent.clock import utc_now
from agent.command_context import CommandContext, Outcome
from agent.errors import ForbiddenSpecEdit, InvalidModelResponse, SpecLoopLimit
from agent.pathpolicy import AGENT
from agent.prompt import PromptBuilder
from agent.roles.goal_examples import examples_section, run_goal_examples
from agent.roles.loops import current_round, end_loop
from agent.roles.prompting import quote_feedback, quote_files, quote_json, read_project_text, report_cuts
from agent.roles.task_files import (
    builder_files,
    examples_for_plans,
    find_spec,
    load_json,
    restatable_text,
    restates_goal,
)
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


def edit_error(edit: dict[str, Any]) -> str | None:
    """Why one section edit is not allowed, or None."""
    if _canonical(edit["section"]) is None:
        return f"section {edit['section']!r} may not be edited; allowed: {', '.join(ALLOWED_SECTIONS)}"
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
        edits = answer.get("section_edits") if isinstance(answer, dict) else None
        if isinstance(edits, dict) and isinstance(edits.get("section_edits"), list):
            # A whole answer where its edits belong (a plan that built the answer in a local and
            # returned `section_edits = <that local>`): the agent takes the inner answer's edits.
            ctx.log("info", "spec: a whole answer given as section_edits; its own section_edits taken")
            answer = {**answer, "section_edits": edits["section_edits"]}
            edits = answer["section_edits"]
        if isinstance(edits, dict) and {"section", "content"} <= edits.keys():
            # One edit where a list of them belongs: the agent wraps it (a model repeats this slip
            # after every schema refusal, and a failed update_spec ends lorch's run).
            ctx.log("info", "spec: one section edit given without its list; taken as a list of one")
            answer = {**answer, "section_edits": [edits]}
        # "updated" with nothing to apply is a contradiction the agent resolves itself: nothing
        # was updated, so the spec needed no change (a failure here would end a finished run).
        if isinstance(answer, dict) and answer.get("status") == "updated" and not answer.get("section_edits"):
            ctx.log("info", "spec: 'updated' without section_edits taken as no_changes_needed")
            answer = {**answer, "status": "no_changes_needed"}
            answer.pop("section_edits", None)
        if isinstance(answer, dict) and answer.get("status") == "changes_requested" \
                and not answer.get("required_changes") and isinstance(answer.get("summary"), str) \
                and answer["summary"].strip():
            # Changes requested without saying which: the summary says it (a repair tends to get the
            # same answer back, and a failure would end the run).
            ctx.log("info", "spec: changes_requested without required_changes; the summary taken as the change")
            answer = {**answer, "required_changes": [answer["summary"].strip()]}
        return answer
    return prepare


_BARE_PATH = re.compile(r"\.?/?[\w./-]+\.\w{1,5}")


# Words that say nothing about code: "Inputs and Changelog updated" is the maintainer's own work, and
# "Review approved, task meets goal" says the work is done; asked of the builder, either keeps
# lorch's loop going on right code until its bound fails the run.
_FILLER = frozenset("a an and the of in to with for on section sections spec heading headings updated update "
                    "updates edited edit added add entry entries note notes new is are was were has have been "
                    "be needs need needed & + , . review reviewed approved approval task tasks meets met goal "
                    "goals done complete completed it all as expected".split())
_PROMPT_HEADINGS = ("inputs", "goal", "files", "task")  # headings of the maintainer's prompt, cited as sections


# Words that name no change once the agent has run the goal's examples and each holds: "fix
# temperature.py to match the expected output" of a right fix, or ["findings"] with "the goal's
# examples do not hold" while they all hold, would keep lorch's loop going on right code.
_VAGUE = frozenset("fix fixed fixes fixing match matches matching expected expectation expectations output "
                   "outputs result results correct correctly incorrect incorrectly bug bugs work works working "
                   "properly should must behaviour behavior implementation implemented implement code function "
                   "functions make sure return returns returned value values so that according accordingly "
                   "this its their test tests pass passes passing finding findings example examples hold holds "
                   "not do does".split())


def _nothing_for_the_builder(changes: list[Any], headings: tuple[str, ...] = (), vague: bool = False) -> bool:
    """Required changes that only name spec sections ("status", "changelog", the spec's own headings,
    the prompt's "Inputs"), the maintainer's own work ("updated", "added"), or files ("fizzbuzz.py"):
    nothing the builder could act on. Each such request costs an implement_changes and a review
    (`["fizzbuzz.py"]`, `["Inputs and Changelog updated"]` for right code), and repeated it ends
    the run at the spec loop's bound."""
    names = sorted({*(a.lower() for a in ALLOWED_SECTIONS), *(h.lower() for h in headings), *_PROMPT_HEADINGS,
                    "open_questions"}, key=len, reverse=True)

    def bookkeeping(change: str) -> bool:
        text = change.replace("_", " ").lower()
        for name in names:  # longest first: "open questions" before "questions"
            text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", " ", text)
        text = _BARE_PATH.sub(" ", text)
        return all(w in _FILLER or (vague and w in _VAGUE) for w in re.findall(r"[\w&+]+|[,.]", text))

    return bool(changes) and all(isinstance(c, str) and bookkeeping(c) for c in changes)


class _Answers:
    """The answers seen for one command: the spec's check, and the best one to fall back on.

    A model told that a section may not be edited may answer `changes_requested` with its own
    sections as required changes ("status", "changelog", …) — nothing the builder could do — and
    repeat it in every round of lorch's loop. Such an answer is sent back; after the repairs the agent falls back on
    the earlier answer whose allowed edits it can apply, dropping the forbidden ones.
    """

    def __init__(self, ctx: CommandContext, spec: str | None, checked: list[dict[str, Any]]) -> None:
        self.ctx = ctx
        self.spec = spec
        text = read_project_text(ctx, spec) if spec else None
        self.headings = tuple(m.group(2) for line in (text or "").splitlines() if (m := _HEADING.match(line)))
        self.with_edits: dict[str, Any] | None = None  # the last answer with at least one allowed edit
        # The goal's examples all hold: a change that is vague or only says the goal (or the spec, or
        # these instructions) again names nothing the code does wrong.
        self.examples_hold = bool(checked) and all(r["held"] for r in checked)
        self.calls = "; ".join(r["call"] for r in checked)[:300]
        self.known = restatable_text(ctx, [spec] if spec else [])

    def nothing(self, changes: list[Any]) -> bool:
        """Required changes that give the builder nothing to do (see _nothing_for_the_builder)."""
        if _nothing_for_the_builder(changes, self.headings, vague=self.examples_hold):
            return True
        return self.examples_hold and bool(changes) and all(
            isinstance(c, str) and restates_goal(c, self.known) for c in changes)

    def check(self, answer: dict[str, Any]) -> None:
        edits = answer.get("section_edits") or []
        if edits and self.spec is None:
            raise ForbiddenSpecEdit("there is no spec file to edit; answer without section_edits "
                                    "(no_changes_needed or changes_requested)")
        if self.spec is not None and any(edit_error(e) is None for e in edits):
            self.with_edits = answer
        if answer.get("status") == "changes_requested" and self.nothing(answer.get("required_changes") or []):
            held = (f"; the agent ran the goal's own examples on the code and each holds ({self.calls})"
                    if self.examples_hold else "")
            raise InvalidAnswer(
                "required_changes name only spec sections or files, or say nothing the code must change (" +
                ", ".join(answer["required_changes"][:6]) + "): sections are yours to edit, and a file name says "
                f"nothing the builder can do{held}. If the code meets the spec, answer status "
                f"\"updated\" with section_edits of {', '.join(ALLOWED_SECTIONS)}; use changes_requested only "
                "for code that contradicts the spec, saying what the code must change.")
        check_edits(answer)

    def salvage(self, answer: dict[str, Any]) -> dict[str, Any] | None:
        if self.nothing(answer.get("required_changes") or []) or not answer.get("section_edits"):
            if self.with_edits is not None and answer is not self.with_edits:
                self.ctx.log("info", "spec: falling back on the earlier answer with edits it may make")
                answer = self.with_edits
            elif answer.get("status") == "changes_requested" and (self.spec is None or not any(
                    edit_error(e) is None for e in answer.get("section_edits") or [])):
                self.ctx.log("info", "spec: changes requested of the spec's own sections or of bare file "
                             "names only, taken as no_changes_needed")
                return {**answer, "status": "no_changes_needed", "required_changes": []}
        edits = answer.get("section_edits") or []
        kept = [e for e in edits if edit_error(e) is None] if self.spec is not None else []
        dropped = [str(e["section"]) for e in edits if e not in kept]
        self.ctx.log("warn", "spec: edits still not allowed after the repairs were dropped", sections=dropped[:10])
        out = {**answer, "section_edits": kept}
        if out["status"] == "changes_requested" and self.nothing(out.get("required_changes") or []):
            self.ctx.log("info", "spec: changes requested of the spec's own sections only; none sent to the builder")
            out.update(status="updated" if kept else "no_changes_needed", required_changes=[])
        if not kept:
            out.pop("section_edits")
            if out["status"] == "updated":
                self.ctx.log("info", "spec: 'updated' without section_edits taken as no_changes_needed")
                out["status"] = "no_changes_needed"
        return out


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
    budget = PromptBuilder(ctx.settings.budget)
    spec = find_spec(ctx)
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
    seen = _Answers(ctx, spec, checked)
    try:
        answer = obtain_answer(ctx, AnswerSpec("spec_maintainer", "spec", seen.check, _prepare(ctx), seen.salvage,
                                               plan_context={"examples": examples_for_plans(ctx, checked, [])}),
                               "\n".join(parts))
    except InvalidModelResponse as exc:
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


def _recorded_by_the_agent(ctx: CommandContext, spec: str | None, exc: InvalidModelResponse) -> Outcome:
    """No usable answer from the model: the agent records what it knows (the files the builder wrote and
    the review's verdict) in the Changelog itself. The spec's bookkeeping sections are all this role
    may touch, and a run whose code was built and reviewed should not end over how a note is phrased."""
    safe = sanitize_id(ctx.cmd.task_id)
    review = load_json(ctx, f"reviews/{safe}.json")
    verdict = str((review if isinstance(review, dict) else {}).get("status") or "not recorded")
    files = builder_files(ctx)
    entry = (f"- {ctx.cmd.task_id}: files written by the builder: {', '.join(files) if files else 'none recorded'}; "
             f"review {verdict}. (Recorded by the agent: the model gave no usable spec answer.)")
    edited: list[str] = []
    if spec is not None:
        text = ctx.workspace.read_text(spec)
        body = _section_body(text, "Changelog")
        new_text = apply_section_edits(text, [{"section": "Changelog", "content": (body + "\n" + entry).strip("\n")}])
        ctx.write(spec, new_text, policy=ctx.policy.allowing(ctx.workspace.normalize(spec)))
        edited = ["Changelog"]
    applied(ctx, "spec_changelog_by_agent", reason=exc.message[:300])
    status = "updated" if edited else "no_changes_needed"
    summary = f"Changelog entry recorded by the agent; the model gave no usable answer ({exc.message[:200]})"
    notes = {"task_id": ctx.cmd.task_id, "status": status, "summary": summary, "required_changes": [],
             "edited_sections": edited, "spec_file": spec, "created_at": utc_now(), "answer_via": "agent"}
    notes_art = ctx.write(f"spec_notes/{safe}.json", orjson.dumps(notes, option=orjson.OPT_INDENT_2))
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
