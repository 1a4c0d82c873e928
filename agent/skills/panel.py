"""The §7.4 approval panel and the exact promotion commands (§7.4, §7.6), as text for a person.

The agent never runs these commands: `skills/allowed/` is changed by a human only.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from agent.errors import AgentError
from agent.skills.home import ALLOWED, SkillsHome

__all__ = ["render_panel", "promotion_commands", "archive_name"]

_CHOICES = "[V]iew code  [R]erun tests  [E]dit  [F]ix & retest  [Y]es (promote)  [N]o (reject)"


def archive_name(name: str, version: str, test: bool = False) -> str:
    return f"{name}{'_test' if test else ''}_v{version}.lua"


def _q(path: Path) -> str:
    return shlex.quote(str(path))


def promotion_commands(home: SkillsHome, approval: dict[str, Any]) -> list[str]:
    """What the human runs: archive an older promoted version, copy the draft, make it read-only, resume."""
    name = str(approval["skill"])
    draft = home.skill_path(name, "agent")
    draft_test = draft.with_name(f"{name}_test.lua")
    target = home.skill_path(name, ALLOWED)
    target_test = target.with_name(f"{name}_test.lua")
    cmds: list[str] = []
    if target.is_file():
        try:
            old = home.load(name, ALLOWED).meta.version
        except AgentError:
            old = "unknown"
        cmds.append(f"mkdir -p {_q(home.archive_dir)}")
        cmds.append(f"mv {_q(target)} {_q(home.archive_dir / archive_name(name, old))}")
        if target_test.is_file():
            cmds.append(f"mv {_q(target_test)} {_q(home.archive_dir / archive_name(name, old, test=True))}")
    cmds += [f"cp {_q(draft)} {_q(home.allowed_dir)}/", f"cp {_q(draft_test)} {_q(home.allowed_dir)}/",
             f"chmod 444 {_q(target)}", f"chmod 444 {_q(target_test)}",
             f"luallm-agent skills resume --home {_q(home.root)}"]
    return cmds


def render_panel(home: SkillsHome, approval: dict[str, Any]) -> str:
    """The approval panel for one pending skill."""
    tests = approval.get("tests") or {}
    lines = [f"┌─ Skill Approval: {approval['skill']} (v{approval.get('version')})", "│", "│  Files:",
             f"│    skill: {approval['files']['skill']}", f"│    test:  {approval['files']['test']}", "│",
             f"│  Tests: {tests.get('passed', 0)}/{tests.get('total', 0)} passed"]
    for r in tests.get("results") or []:
        mark = "✅" if r.get("status") == "pass" else "❌"
        lines.append(f"│    {mark} {r.get('name')} ({r.get('duration_ms', 0)}ms)")
        if r.get("status") != "pass" and r.get("message"):
            lines.append(f"│       {r['message']}")
    lines += ["│", f"│  Paths declared: {', '.join(approval.get('paths') or []) or '(none)'}",
              f"│  Dependencies: {', '.join(approval.get('dependencies') or []) or '(none)'}"]
    if approval.get("commands"):
        lines.append(f"│  Commands: {', '.join(approval['commands'])}")
    if home.skill_path(str(approval["skill"]), ALLOWED).is_file():
        lines.append("│  Update: the promoted version will be archived to skills/allowed/.archive/")
    lines += ["│", f"│  {_CHOICES}", "└─"]
    return "\n".join(lines)
