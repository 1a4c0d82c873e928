"""Spec maintainer: update_spec → edits to four allowed sections, `spec_notes/<task>.json`, spec.* event.

Only `## Status`, `## Changelog`, `## Completion` and `## Open Questions` may change; any other
edit is refused with `forbidden_spec_edit` (sent back to the model for repair first).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from agent.answers import AnswerSpec, obtain_answer
from agent.clock import utc_now
from agent.errors import ForbiddenSpecEdit
from agent.pathpolicy import AGENT
from agent.prompt import PromptBuilder
from agent.roles.context import CommandContext, Outcome
from agent.roles.prompting import messages_for, quote_feedback, quote_files, quote_json, report_cuts
from agent.roles.reviewer import builder_files
from agent.workspace import sanitize_id

__all__ = ["handle", "find_spec", "apply_section_edits", "ALLOWED_SECTIONS"]

ALLOWED_SECTIONS = ("Status", "Changelog", "Completion", "Open Questions")
SPEC_SEARCH = ("MASTER-SPEC.md", "SPEC.md", "spec.md", "specs/MASTER-SPEC.md", "specs/SPEC.md",
               "docs/MASTER-SPEC.md", "docs/SPEC.md")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_TOP_HEADING = re.compile(r"^#{1,2}\s")
EVENTS = {"updated": "spec.updated", "no_changes_needed": "spec.no_changes_needed",
          "changes_requested": "spec.changes_requested"}


def find_spec(ctx: CommandContext) -> str | None:
    candidates = [ctx.settings.spec_path] if ctx.settings.spec_path else list(SPEC_SEARCH)
    return next((p for p in candidates if p and ctx.workspace.exists(p)), None)


def _canonical(section: str) -> str | None:
    name = section.strip().lstrip("#").strip().rstrip(":").strip()
    return next((a for a in ALLOWED_SECTIONS if a.lower() == name.lower()), None)


def check_edits(answer: dict[str, Any]) -> None:
    for edit in answer.get("section_edits") or []:
        if _canonical(edit["section"]) is None:
            raise ForbiddenSpecEdit(
                f"section {edit['section']!r} may not be edited; allowed: {', '.join(ALLOWED_SECTIONS)}",
                section=edit["section"])
        if any(_TOP_HEADING.match(line) for line in edit["content"].splitlines()):
            raise ForbiddenSpecEdit(
                f"the content for {edit['section']!r} contains a top-level heading; give the section body only",
                section=edit["section"])


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
    budget = PromptBuilder(ctx.settings.budget)
    spec = find_spec(ctx)
    safe = sanitize_id(cmd.task_id)
    parts = [f"# Update the spec for task {cmd.task_id}", quote_json("Inputs", cmd.inputs),
             "## Spec file\n" + (quote_files(ctx, budget, [spec], AGENT) if spec else "(no spec file found)"),
             "## Review\n" + (quote_feedback(ctx, budget, [f"reviews/{safe}.json"]) or "(none)"),
             "## Files written by the builder\n" + ("\n".join(builder_files(ctx)) or "(unknown)")]
    ctx.progress(f"asking the model about the spec {spec or '(none found)'}", stage="updating_spec")
    answer = obtain_answer(ctx, AnswerSpec("spec_maintainer", "spec", check_edits),
                           messages_for(ctx, "\n".join(parts)))
    data = answer.data
    edits = data.get("section_edits") or []
    edited: list[str] = []
    if edits:
        if spec is None:
            raise ForbiddenSpecEdit("no spec file found to edit (set --spec-path)")
        new_text = apply_section_edits(ctx.workspace.read_text(spec), edits)
        # The spec maintainer's exception: the one spec file it found (or was given) to edit.
        ctx.write(spec, new_text, policy=ctx.policy.allowing(ctx.workspace.normalize(spec)))
        edited = [str(_canonical(e["section"])) for e in edits]
    notes = {"task_id": cmd.task_id, "status": data["status"], "summary": data["summary"],
             "required_changes": data.get("required_changes", []), "edited_sections": edited,
             "spec_file": spec, "created_at": utc_now()}
    notes_art = ctx.write(f"spec_notes/{safe}.json", orjson.dumps(notes, option=orjson.OPT_INDENT_2))
    payload: dict[str, Any] = {"summary": data["summary"], "edited_sections": edited,
                               "notes_file": notes_art.path, "answer_via": answer.via}
    if data.get("required_changes"):
        payload["required_changes"] = data["required_changes"]
    cuts = report_cuts(ctx, budget)
    if cuts:
        payload["prompt_cuts"] = cuts
    return Outcome(EVENTS[data["status"]], payload)
