"""The skills part of a plan prompt: promoted Lua skills and model-invocable Agent Skills, one line each."""

from __future__ import annotations

from pathlib import Path

from agent.errors import AgentError
from agent.skills.agent_skills import discover
from agent.skills.home import ALLOWED, SkillsHome

__all__ = ["skills_prompt_text"]

_MAX_LISTED = 100


def skills_prompt_text(home_dir: str | None, project: Path | None) -> str:
    """Empty when skills are off (no --skills-home) or there are none."""
    if not home_dir:
        return ""
    home = SkillsHome(home_dir)
    lines: list[str] = []
    for name in home.names(ALLOWED)[:_MAX_LISTED]:
        try:
            meta = home.load(name, ALLOWED).meta
        except AgentError:
            continue
        others = [f for f in meta.public_functions if f != "run"]
        extra = f"; also skills.{name}.{{{', '.join(others)}}}(...)" if others else ""
        lines.append(f"- skills.{name}{{...}} — {meta.description} (v{meta.version}{extra})")
    agent_skills = [s for s in discover(project) if not s.disable_model_invocation][:_MAX_LISTED]
    if not lines and not agent_skills:
        return ""
    out = ["", "Skills (vetted Lua modules; call from the plan like tools: each returns data or {error=...}):"]
    out += lines or ["- (none)"]
    if agent_skills:
        out.append("Agent Skills (instructions; skills.instructions(name) returns {name, body, allowed_tools} "
                   "and limits further tool calls to allowed_tools):")
        out += [f"- {s.name} — {s.description}" for s in agent_skills]
    return "\n".join(out) + "\n"
