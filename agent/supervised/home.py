"""The agent home (seed 000 §2): `config.json`, `state/`, `skills/`, `tasks/`, and `init`.

Protection classes: `config.json` and the files of `skills/allowed/` are read-only by mode
(0444, defence in depth: root and the owner can chmod them back) and, the primary layer, refused
by the supervised path policy (`effects.home_policy`) whatever their mode. `init` never
overwrites an existing `config.json`: a person's edits are theirs.
"""

from __future__ import annotations

import copy
import json
import os
import stat
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import orjson

from agent.errors import HomeConfigInvalid
from agent.resources import schema_dir
from agent.skills.home import SkillsHome, default_home

__all__ = ["AgentHome", "HomeConfig", "DEFAULT_CONFIG", "TIERS", "init_home", "load_config", "default_home",
           "config_schema", "CONFIG_SCHEMA_ID"]

CONFIG_SCHEMA_ID = "luallm-agent-config-v1"
TIERS = ("task_confirmation", "path_read", "path_write", "skill_promotion", "destructive_overwrite",
         "network_access")

# Seed 000 §15, with `model_selection` left empty: a fresh home uses whichever luallm model runs
# (an invented default like "llama3-8b-q4" would only produce MODEL_WAIT for a model nobody has).
DEFAULT_CONFIG: dict[str, Any] = {
    "$schema": CONFIG_SCHEMA_ID,
    "allowed_paths": [],
    "blocked_paths": ["~/.ssh", "~/.gnupg", "/etc", "/usr", "/var", "/proc", "/sys", "/dev"],
    "approvals": {"task_confirmation": "prompt", "path_read": "auto", "path_write": "prompt",
                  "skill_promotion": "manual", "destructive_overwrite": "prompt", "network_access": "prompt"},
    "limits": {"max_task_steps": 50, "max_plan_retries": 2, "max_node_retries": 3, "max_skill_retries": 3,
               "llm_timeout_seconds": 120, "llm_backoff_base_seconds": 1, "llm_backoff_max_seconds": 60,
               "skill_exec_timeout_seconds": 30, "skill_memory_limit_mb": 50, "max_open_file_handles": 10,
               "model_start_timeout_seconds": 120, "task_timeout_seconds": 3600,
               "prompt_budget_bytes": 65536},
    "audit": {"max_size_mb": 50, "max_files": 5},
    "luallm": {"binary": "luallm", "auto_start": False, "auto_stop": False},
    "model_selection": {},
    "editor": "$EDITOR",
}


@cache
def config_schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((schema_dir() / "supervised-config.schema.json").read_text())
    return data


@dataclass(frozen=True)
class HomeConfig:
    """A validated `config.json` with the defaults filled in (`raw` is the file as written)."""

    data: dict[str, Any]
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    def section(self, name: str) -> dict[str, Any]:
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}

    def limit(self, name: str) -> Any:
        return self.section("limits").get(name, DEFAULT_CONFIG["limits"].get(name))

    def tier(self, name: str) -> str:
        if name == "skill_promotion":
            return "manual"  # seed 000 §8: enforced whatever the file says
        return str(self.section("approvals").get(name, DEFAULT_CONFIG["approvals"][name]))

    @property
    def allowed_paths(self) -> list[str]:
        return [str(p) for p in self.data.get("allowed_paths") or []]

    @property
    def blocked_paths(self) -> list[str]:
        return [str(p) for p in self.data.get("blocked_paths") or []]

    @property
    def luallm_binary(self) -> str:
        return str(self.section("luallm").get("binary") or "luallm")

    @property
    def auto_start(self) -> bool:
        return bool(self.section("luallm").get("auto_start", False))

    def selection(self, task_type: str) -> list[str]:
        """Candidate luallm model names for a task type: prefer, then fallback (default's if absent)."""
        table = self.section("model_selection")
        pick = table.get(task_type) or table.get("default") or {}
        names = [*pick.get("prefer", []), *pick.get("fallback", [])]
        return list(dict.fromkeys(str(n) for n in names))


class AgentHome:
    """Paths under one agent home."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.realpath(os.fspath(root)))
        self.config_path = self.root / "config.json"
        self.state_dir = self.root / "state"
        self.current_task = self.state_dir / "current_task.json"
        self.audit_path = self.state_dir / "audit_log.jsonl"
        self.approvals_dir = self.state_dir / "pending_approvals"
        self.skills_dir = self.root / "skills"
        self.skills_agent = self.skills_dir / "agent"
        self.skills_allowed = self.skills_dir / "allowed"
        self.archive = self.skills_allowed / ".archive"
        self.tasks_dir = self.root / "tasks"

    @classmethod
    def from_arg(cls, explicit: str | None) -> AgentHome:
        """--home, else $LUALLM_AGENT_HOME, else ~/.config/luallmagent."""
        return cls(default_home(explicit))

    def skills(self) -> SkillsHome:
        return SkillsHome(self.root)

    def task_dir(self, task_id: str) -> Path:
        return self.tasks_dir / task_id

    def protected(self) -> list[Path]:
        """What the agent never writes: the config and human-managed skills (§2 protection classes)."""
        return [self.config_path, self.skills_allowed]

    def config(self) -> HomeConfig:
        return load_config(self.config_path)


def _merged(defaults: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(defaults)
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "model_selection":
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def load_config(path: Path) -> HomeConfig:
    """Read and validate `config.json`; HomeConfigInvalid names the file, the field and the fix."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise HomeConfigInvalid(f"{path} does not exist; run `luallm-agent init` first", config_path=str(path),
                                fix="luallm-agent init") from None
    except OSError as exc:
        raise HomeConfigInvalid(f"cannot read {path}: {exc.strerror or exc}", config_path=str(path)) from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise HomeConfigInvalid(f"{path} is not valid JSON: {exc}", config_path=str(path)) from None
    errors = sorted(jsonschema.Draft202012Validator(config_schema()).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        lines = [f"{'.'.join(str(p) for p in e.path) or '(top level)'}: {e.message}" for e in errors[:5]]
        raise HomeConfigInvalid(f"{path} does not match schemas/supervised-config.schema.json: " + "; ".join(lines),
                                config_path=str(path), problems=lines)
    if "providers" in data:
        from agent.models.config import parse_config

        try:
            parse_config({k: data[k] for k in ("providers", "routing", "retry", "luallm") if k in data}, str(path))
        except Exception as exc:  # ConfigError: one line per problem
            raise HomeConfigInvalid(f"{path}: providers/routing: {exc}", config_path=str(path)) from None
    return HomeConfig(_merged(DEFAULT_CONFIG, data), data)


@dataclass
class InitReport:
    home: Path
    created: list[str]
    config_kept: bool


def init_home(home: AgentHome, *, models: list[str] | None = None) -> InitReport:
    """Create the skeleton and a default config (never replacing one); set the protection modes."""
    created: list[str] = []
    for d in (home.root, home.state_dir, home.approvals_dir, home.skills_agent, home.skills_allowed,
              home.archive, home.tasks_dir):
        if not d.is_dir():
            d.mkdir(parents=True, mode=0o700, exist_ok=True)
            created.append(str(d))
    kept = home.config_path.exists() or home.config_path.is_symlink()
    if not kept:
        config = copy.deepcopy(DEFAULT_CONFIG)
        if models:
            config["model_selection"] = {"default": {"prefer": list(models), "fallback": []}}
        text = json.dumps(config, indent=2) + "\n"
        # O_EXCL: two inits racing must not both write; the loser keeps the winner's file.
        try:
            fd = os.open(home.config_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
        except FileExistsError:
            kept = True
        else:
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            created.append(str(home.config_path))
    protect_modes(home)
    return InitReport(home.root, created, kept)


def protect_modes(home: AgentHome) -> None:
    """config.json and promoted skill files 0444 (the directory stays writable for the human's `cp`)."""
    targets = [home.config_path] if home.config_path.is_file() and not home.config_path.is_symlink() else []
    if home.skills_allowed.is_dir():
        targets += [p for p in home.skills_allowed.glob("*.lua") if p.is_file() and not p.is_symlink()]
    for p in targets:
        mode = stat.S_IMODE(p.stat().st_mode)
        if mode & 0o222:
            p.chmod(mode & ~0o222)
