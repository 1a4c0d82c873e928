"""Orchestration: intake / task_discovery → proposed tasks, a clarification request, or a plan conflict.

Candidates are read inside the workspace only, under the prompt budget. It never writes plan or
spec files; it writes the planning artifacts requested in `expected_outputs`.
"""

from __future__ import annotations

from typing import Any

import orjson

from agent.answering.loop import AnswerSpec, obtain_answer
from agent.command_context import CommandContext, Outcome
from agent.errors import ArtifactWriteFailed, PathRejected, PlanFileMissing, SecretInArtifact
from agent.prompt import PromptBuilder
from agent.roles.prompting import quote_files, quote_json, report_cuts
from agent.roles.task_files import SPEC_SEARCH
from agent.workspace import sanitize_id

__all__ = ["handle"]


def _candidates(ctx: CommandContext) -> list[dict[str, Any]]:
    disc = ctx.cmd.inputs.get("discovery")
    cands = disc.get("candidates") if isinstance(disc, dict) else None
    return [c for c in cands or [] if isinstance(c, dict) and isinstance(c.get("path"), str)]


def _prompt_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    # The absolute discovery root says nothing to the model and would make prompts machine-specific.
    shown = dict(inputs)
    if isinstance(shown.get("discovery"), dict):
        shown["discovery"] = {k: v for k, v in shown["discovery"].items() if k != "root"}
    return shown


def _safe_task_id(raw: str, n: int, seen: set[str]) -> str:
    tid = sanitize_id(raw.strip()) if raw.strip() else f"T-{n:03d}"
    while tid in seen:
        tid = f"{tid}-{n}"
    seen.add(tid)
    return tid


def handle(ctx: CommandContext) -> Outcome:
    cmd = ctx.cmd
    budget = PromptBuilder(ctx.settings.budget)
    cands = _candidates(ctx)
    paths = [c["path"] for c in cands]
    parts = [f"# {cmd.action} {cmd.task_id}", quote_json("Inputs", _prompt_inputs(cmd.inputs)),
             "## Candidate files\n" + (quote_files(ctx, budget, paths) or "(no readable candidates)")]

    def check(answer: dict[str, Any]) -> None:
        if answer.get("needs_clarification") or answer.get("conflict"):
            return
        # "plan.md" for the candidate "PLAN.md" is the model's slip, not a different file.
        same = [p for p in paths if p.lower() == str(answer["plan_file"]).lower()]
        if same and not ctx.workspace.exists(answer["plan_file"]):
            answer["plan_file"] = same[0]
        plan = answer["plan_file"]
        if not ctx.workspace.is_file(plan):
            raise PlanFileMissing(f"plan_file {plan!r} does not exist in the workspace; candidates: "
                                  + ", ".join(paths[:20]), plan_file=plan)

    ctx.progress(f"asking the model to plan from {len(paths)} candidate files", stage="planning")
    answer = obtain_answer(ctx, AnswerSpec("orchestration", "intake", check,
                                           guard_answer=bool(cmd.expected_outputs)), "\n".join(parts))
    data = answer.data
    cuts = report_cuts(ctx, budget)
    if data.get("needs_clarification") and data.get("questions"):
        outcome = Outcome("orchestration.needs_clarification", {"questions": data["questions"],
                                                                 "notes": data.get("notes", "")})
    elif data.get("conflict"):
        outcome = Outcome("orchestration.plan_conflict", {**data["conflict"], "notes": data.get("notes", "")})
    else:
        outcome = Outcome("orchestration.proposed_tasks", _proposal(ctx, data, cands))
    if cuts:
        outcome.payload["prompt_cuts"] = cuts
    _write_planning_artifacts(ctx, outcome, [*paths, *_named_files(data), *_spec_files(ctx)])
    return outcome


def _named_files(data: dict[str, Any]) -> list[str]:
    """The plan files the answer itself names (the chosen one, a conflict's candidates)."""
    conflict = data.get("conflict")
    named = [data.get("plan_file"), *((conflict.get("candidates") or []) if isinstance(conflict, dict) else [])]
    return [p for p in named if isinstance(p, str)]


def _spec_files(ctx: CommandContext) -> list[str]:
    return [ctx.settings.spec_path] if ctx.settings.spec_path else list(SPEC_SEARCH)


def _proposal(ctx: CommandContext, data: dict[str, Any], cands: list[dict[str, Any]]) -> dict[str, Any]:
    plan = ctx.workspace.normalize(data["plan_file"])
    plan_candidates: list[dict[str, Any]] = [{"path": plan, "confidence": float(data["confidence"]),
                                              "reason": "chosen by the model"}]
    for c in cands:
        p = c["path"]
        if p == plan or len(plan_candidates) >= 5 or not ctx.workspace.exists(p):
            continue
        score = c.get("score")
        conf = float(score) if isinstance(score, int | float) and 0 <= score <= 1 else 0.0
        plan_candidates.append({"path": p, "confidence": conf, "reason": str(c.get("reason", "discovered"))})
    seen: set[str] = set()
    tasks = [{"id": _safe_task_id(t["id"], i, seen), "title": t["title"],
              "files": [f for f in t["files"] if isinstance(f, str)]} for i, t in enumerate(data["tasks"], 1)]
    return {"plan_candidates": plan_candidates, "derived_tasks": tasks, "notes": data.get("notes", "")}


def _write_planning_artifacts(ctx: CommandContext, outcome: Outcome, plan_and_spec: list[str]) -> None:
    body = orjson.dumps({"event": outcome.event, "task_id": ctx.cmd.task_id, **outcome.payload},
                        option=orjson.OPT_INDENT_2)
    # An intake never writes plan or spec files: judged on the normalised path, so `./PLAN.md`
    # or `docs/../PLAN.md` is the plan file too.
    policy = ctx.policy.denying(*_normalised(ctx, plan_and_spec))
    for out in ctx.cmd.expected_outputs:
        try:
            ctx.write(out.path, body, policy=policy)
        except (PathRejected, ArtifactWriteFailed, SecretInArtifact) as exc:
            if out.required:  # the same code, so lorch sees why (path_rejected, artifact_write_failed, ...)
                raise type(exc)(f"required output {out.path} could not be written: {exc.message}",
                                **{**exc.details, "path": out.path}) from exc
            ctx.log("warn", "optional output not written", path=out.path, reason=exc.message)


def _normalised(ctx: CommandContext, paths: list[str]) -> list[str]:
    out = []
    for p in paths:
        try:
            out.append(ctx.workspace.normalize(p))
        except PathRejected:
            continue  # a candidate outside the workspace cannot be written through it anyway
    return out
