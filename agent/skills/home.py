"""Where skills live (seed 000 §2): the agent home, its `skills/agent/` drafts and `skills/allowed/`.

`skills/allowed/` is human-managed: nothing in the agent writes there (the lifecycle only prints
commands for a person, and the skill path policy refuses writes into it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent.errors import SkillMetadataInvalid, SkillNotFound
from agent.skills.metadata import NAME_RE, SkillMetadata, parse_metadata

__all__ = ["SkillsHome", "SkillFile", "HomeConfig", "default_home", "DRAFT", "ALLOWED", "MAX_SKILL_BYTES"]

DRAFT, ALLOWED = "agent", "allowed"
MAX_SKILL_BYTES = 512 * 1024


def default_home(explicit: str | None = None) -> Path:
    """--home, else $LUALLM_AGENT_HOME, else ~/.config/luallmagent."""
    raw = explicit or os.environ.get("LUALLM_AGENT_HOME") or "~/.config/luallmagent"
    return Path(os.path.expanduser(raw)).resolve()


@dataclass(frozen=True)
class HomeConfig:
    """The parts of `config.json` skills obey (seed 000 §15); defaults when the file is absent."""

    allowed_paths: tuple[str, ...] = ()
    blocked_paths: tuple[str, ...] = ("~/.ssh", "~/.gnupg", "/etc", "/usr", "/var", "/proc", "/sys", "/dev")
    max_skill_retries: int = 3
    max_open_file_handles: int = 10
    skill_exec_timeout_s: float = 30.0
    skill_memory_mb: int = 64
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class SkillFile:
    """One skill on disk: where it is, which tier, its header and whether a test file sits next to it."""

    path: Path
    tier: str            # "allowed" or "agent"
    meta: SkillMetadata
    test_path: Path | None

    @property
    def name(self) -> str:
        return self.meta.name


class SkillsHome:
    """Paths under one agent home and lookups of skills in it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.realpath(os.fspath(root)))
        self.skills = self.root / "skills"
        self.draft_dir = self.skills / DRAFT
        self.allowed_dir = self.skills / ALLOWED
        self.archive_dir = self.allowed_dir / ".archive"
        self.state_dir = self.root / "state"
        self.approvals_dir = self.state_dir / "pending_approvals"
        self.config_path = self.root / "config.json"
        self.audit_path = self.state_dir / "audit_log.jsonl"

    def tier_dir(self, tier: str) -> Path:
        return self.allowed_dir if tier == ALLOWED else self.draft_dir

    def config(self) -> HomeConfig:
        """config.json's skill settings; an unreadable file is an error, a missing one gives defaults."""
        if not self.config_path.is_file():
            return HomeConfig()
        try:
            data = orjson.loads(self.config_path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise SkillMetadataInvalid(f"cannot read {self.config_path}: {exc}") from None
        if not isinstance(data, dict):
            raise SkillMetadataInvalid(f"{self.config_path} must hold a JSON object")
        raw_limits = data.get("limits")
        limits: dict[str, Any] = raw_limits if isinstance(raw_limits, dict) else {}
        base = HomeConfig()
        return HomeConfig(
            allowed_paths=tuple(str(p) for p in data.get("allowed_paths") or ()),
            blocked_paths=tuple(str(p) for p in data.get("blocked_paths") or base.blocked_paths),
            max_skill_retries=int(limits.get("max_skill_retries", base.max_skill_retries)),
            max_open_file_handles=int(limits.get("max_open_file_handles", base.max_open_file_handles)),
            skill_exec_timeout_s=float(limits.get("skill_exec_timeout_seconds", base.skill_exec_timeout_s)),
            skill_memory_mb=int(limits.get("skill_memory_limit_mb", base.skill_memory_mb)),
            raw=data)

    # -- lookups -------------------------------------------------------------------------------
    def skill_path(self, name: str, tier: str) -> Path:
        if not NAME_RE.match(name):
            raise SkillNotFound(f"not a skill name: {name!r}", skill=name)
        return self.tier_dir(tier) / f"{name}.lua"

    def load(self, name: str, tier: str) -> SkillFile:
        """The skill `name` in `tier`; SkillNotFound / SkillMetadataInvalid (with the file)."""
        path = self.skill_path(name, tier)
        if not path.is_file():
            raise SkillNotFound(f"no skill {name!r} in skills/{tier}/", skill=name, tier=tier)
        source = read_skill_source(path)
        try:
            meta = parse_metadata(source, expect_name=name)
        except SkillMetadataInvalid as exc:
            raise SkillMetadataInvalid(f"{path}: {exc.message}", file=str(path), **exc.details) from None
        test = path.with_name(f"{name}_test.lua")
        return SkillFile(path, tier, meta, test if test.is_file() else None)

    def find(self, name: str) -> SkillFile:
        """A promoted skill if there is one, else the draft."""
        try:
            return self.load(name, ALLOWED)
        except SkillNotFound:
            return self.load(name, DRAFT)

    def names(self, tier: str) -> list[str]:
        directory = self.tier_dir(tier)
        if not directory.is_dir():
            return []
        return sorted(p.stem for p in directory.glob("*.lua")
                      if not p.stem.endswith("_test") and NAME_RE.match(p.stem))


def read_skill_source(path: Path) -> str:
    """A skill file's text: bounded, UTF-8 (a skill is text; bytecode is refused when loading)."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_SKILL_BYTES + 1)
    if len(data) > MAX_SKILL_BYTES:
        raise SkillMetadataInvalid(f"{path}: larger than {MAX_SKILL_BYTES} bytes", file=str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillMetadataInvalid(f"{path}: not UTF-8 text (byte {exc.start})", file=str(path)) from None
