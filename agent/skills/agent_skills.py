"""Agent Skills (seed 001, agentskills.io): `SKILL.md` directories with YAML frontmatter.

Discovered at three levels; on a name clash the higher one wins: personal
(`~/.luallm-agent/skills/`) over project (`<project>/.luallm-agent/skills/`) over compat
(`~/.claude/skills/`) — a checked-out project cannot shadow a person's own skill. Only `name` and
`description` are read up front (for the prompt); the body is loaded when the skill is invoked.
`disable-model-invocation: true` keeps it out of the model's reach, `user-invocable: false` out of
the person's; `allowed-tools` is mapped to this agent's tool names and, once the model loads the
skill in a plan, limits the plan's further tool calls to them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["AgentSkill", "discover", "map_tools", "LEVELS"]

_HEAD_CAP = 64 * 1024
_BODY_CAP = 256 * 1024
LEVELS = ("personal", "project", "compat")


def _roots(project: Path | None) -> list[tuple[str, Path]]:
    home = Path(os.path.expanduser("~"))
    roots = [("personal", home / ".luallm-agent" / "skills")]
    if project is not None:
        roots.append(("project", project / ".luallm-agent" / "skills"))
    roots.append(("compat", home / ".claude" / "skills"))
    return roots


def map_tools(raw: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`allowed-tools` ("Read, Grep, Bash(git:*)" or a list) → (our tool names, names we do not have)."""
    from agent.plans.tools import canonical_tool

    items = raw if isinstance(raw, list) else str(raw or "").replace(",", " ").split()
    mapped: list[str] = []
    unknown: list[str] = []
    for item in items:
        base = str(item).split("(", 1)[0].strip()
        canon = canonical_tool(base) or canonical_tool(base.lower())
        if canon is None:
            unknown.append(str(item))
        elif canon not in mapped:
            mapped.append(canon)
    return tuple(mapped), tuple(unknown)


def _split(text: str) -> tuple[dict[str, Any], str]:
    import yaml

    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0:
        return {}, text
    try:
        meta = yaml.safe_load(text[3:end])
    except yaml.YAMLError:
        return {}, text
    rest = text[end + 4:]
    return (meta if isinstance(meta, dict) else {}), rest.split("\n", 1)[1] if "\n" in rest else ""


@dataclass(frozen=True)
class AgentSkill:
    name: str
    description: str
    level: str
    path: Path
    disable_model_invocation: bool = False
    user_invocable: bool = True
    allowed_tools: tuple[str, ...] | None = None
    unmapped_tools: tuple[str, ...] = ()

    def body(self) -> str:
        """The full instructions (loaded only on invocation)."""
        with open(self.path, "rb") as fh:
            text = fh.read(_BODY_CAP).decode("utf-8", errors="replace")
        return _split(text)[1].strip() + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "level": self.level, "path": str(self.path),
                "allowed_tools": list(self.allowed_tools) if self.allowed_tools is not None else None}


def _load(level: str, directory: Path) -> AgentSkill | None:
    path = directory / "SKILL.md"
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_CAP).decode("utf-8", errors="replace")
    except OSError:
        return None
    meta, body = _split(head)
    name = str(meta.get("name") or directory.name).strip()
    description = str(meta.get("description") or "").strip()
    if not description:
        description = next((line.strip() for line in body.splitlines() if line.strip() and not line.startswith("#")), "")
    allowed = meta.get("allowed-tools")
    mapped, unknown = map_tools(allowed) if allowed is not None else (None, ())
    return AgentSkill(name=name, description=description[:1024], level=level, path=path,
                      disable_model_invocation=meta.get("disable-model-invocation") is True,
                      user_invocable=meta.get("user-invocable") is not False,
                      allowed_tools=mapped, unmapped_tools=unknown)


def discover(project: Path | None) -> list[AgentSkill]:
    """Every Agent Skill, one per name (the higher level wins), sorted by name."""
    found: dict[str, AgentSkill] = {}
    for level, root in _roots(project):
        if not root.is_dir():
            continue
        for directory in sorted(root.iterdir()):
            if not directory.is_dir():
                continue
            skill = _load(level, directory)
            if skill is not None and skill.name not in found:
                found[skill.name] = skill
    return sorted(found.values(), key=lambda s: s.name)
