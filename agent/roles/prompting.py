"""Shared prompt pieces for all roles: the system prompt (from text files) and file sections."""

from __future__ import annotations

import functools
import json
from typing import Any

import orjson

from agent.errors import AgentError
from agent.pathpolicy import MODEL, PathPolicy
from agent.prompt import PromptBuilder
from agent.resources import prompt_text, schema_dir
from agent.roles.context import CommandContext

__all__ = ["system_prompt", "messages_for", "quote_files", "quote_feedback", "quote_json", "report_cuts"]

@functools.cache
def system_prompt(role: str) -> str:
    from agent.answers import plan_tools_for
    from agent.plans import tools_prompt_text

    schema = json.loads((schema_dir() / "answers" / f"{role}.json").read_text())
    common = prompt_text("common.txt").replace("{tools}", tools_prompt_text(plan_tools_for(role)))
    common = common.replace("{schema}", json.dumps(schema, indent=1, sort_keys=True))
    return f"{common}\n{prompt_text(role + '.txt')}"


_JSON_ONLY = ("\nThis agent is configured for JSON answers: reply with the JSON answer (form 2) only, "
              "no Lua plan and no action list.\n")


def messages_for(ctx: CommandContext, user: str) -> list[dict[str, str]]:
    system = system_prompt(ctx.role) + ("" if ctx.settings.prefer_plans else _JSON_ONLY) + _skills_text(ctx)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _skills_text(ctx: CommandContext) -> str:
    """Promoted skills and Agent Skills, when the agent runs with --skills-home (agent/skills/catalog.py)."""
    home = getattr(ctx.settings.plan_limits, "skills_home", None)
    if not home or not ctx.settings.prefer_plans:
        return ""
    from agent.skills.catalog import skills_prompt_text

    return skills_prompt_text(home, ctx.workspace.root)


def quote_json(title: str, value: Any) -> str:
    return f"## {title}\n```json\n{orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()}\n```\n"


def quote_files(ctx: CommandContext, builder: PromptBuilder, paths: list[str], policy: PathPolicy = MODEL) -> str:
    """File sections for the existing paths among `paths` that `policy` lets a prompt show (budgeted).

    Task files come from an intake's answer, so by default they are a model-facing read: no
    dot-path (`.env`) or bookkeeping file is ever quoted to the model.
    """
    out = []
    for rel in paths:
        if not isinstance(rel, str) or not ctx.workspace.exists(rel, policy=policy):
            continue
        try:
            text = ctx.workspace.read_text(rel, max_bytes=4 * 1024 * 1024, policy=policy)
        except (OSError, ValueError, AgentError):
            continue
        out.append(builder.file(rel, text))
    return "\n".join(out)


_VOLATILE = ("created_at",)


def quote_feedback(ctx: CommandContext, builder: PromptBuilder, paths: list[str]) -> str:
    """Like quote_files for JSON feedback files, without timestamps: prompts stay deterministic,
    so recorded responses replay and identical situations ask identical questions."""
    out = []
    for rel in paths:
        if not ctx.workspace.exists(rel):
            continue
        try:
            data = orjson.loads(ctx.workspace.read_bytes(rel, max_bytes=4 * 1024 * 1024))
        except (OSError, AgentError, orjson.JSONDecodeError):
            continue
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in _VOLATILE}
        out.append(builder.file(rel, orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()))
    return "\n".join(out)


def report_cuts(ctx: CommandContext, builder: PromptBuilder) -> list[dict[str, Any]]:
    """Say what the budget cut, once in a log line; the list also goes into the terminal payload."""
    cuts = builder.cut_summary()
    if cuts:
        ctx.log("info", "prompt budget cut files", files=[c["path"] for c in cuts][:20], count=len(cuts))
    return cuts
