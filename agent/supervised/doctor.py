"""`luallm-agent doctor` (seed 000 §13): what would stop a run, checked before one starts.

Levels: `ok`, `info` (a fact, never a problem), `warn` (runs, but something is off) and `fatal`
(cannot run). Exit code: 0 when nothing is above `info`, 2 when the worst is `warn`, 1 on `fatal`.
A missing luallm is a warning, not fatal: a home whose config names OpenAI-compatible `providers`
runs without it, and `run` itself refuses when a luallm model is needed and luallm is absent.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.errors import AgentError
from agent.supervised.home import AgentHome, HomeConfig
from agent.supervised.paths import expand_user

__all__ = ["Check", "run_checks", "exit_code", "render", "sandbox_boundary"]

LEVELS = ("ok", "info", "warn", "fatal")
# The task types supervised mode asks models for (seed 000 §10), checked when model_selection is empty.
TASK_TYPES = ("planning", "simple_transform", "skill_generation")


@dataclass(frozen=True)
class Check:
    section: str
    name: str
    level: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"section": self.section, "name": self.name, "level": self.level, "detail": self.detail}


def exit_code(checks: list[Check]) -> int:
    levels = {c.level for c in checks}
    return 1 if "fatal" in levels else 2 if "warn" in levels else 0


def _writable_by_mode(path: Path) -> bool:
    """Mode bits, not access(2): under root access() says yes to everything."""
    return bool(stat.S_IMODE(path.stat().st_mode) & 0o222)


def sandbox_boundary() -> tuple[str, str]:
    """(level, detail) for the OS sandbox: the same report as `luallm-agent sandbox`.

    Not confined is `info`, not a problem: supervised plans and skills get read-only tools (no
    commands), and still run in the Lua sandbox inside a worker with rlimits."""
    from agent.sandbox.detect import current

    try:
        boundary = current()
    except Exception as exc:  # a probe failing is itself a finding
        return "warn", f"sandbox probe failed: {type(exc).__name__}: {exc}"
    return ("ok" if boundary.confined else "info"), boundary.describe()


def run_checks(home: AgentHome) -> list[Check]:
    out: list[Check] = []

    def add(sec: str, name: str, level: str, detail: str) -> None:
        out.append(Check(sec, name, level, detail))

    config: HomeConfig | None = None
    if not home.root.is_dir():
        add("home", "home", "fatal", f"{home.root} does not exist; run `luallm-agent init`")
        return out
    try:
        config = home.config()
        add("config", "config file", "ok", f"{home.config_path} (valid JSON, schema OK)")
    except AgentError as exc:
        add("config", "config file", "fatal", exc.message)
    if home.config_path.is_file():
        if _writable_by_mode(home.config_path):
            add("config", "config mode", "warn", f"{home.config_path} is writable; fix: chmod 444 {home.config_path}")
        else:
            add("config", "config mode", "ok", "not writable (0444); the path policy also refuses it")
    _dirs(home, add)
    if config is not None:
        _paths(config, add)
        _luallm(config, add)
    _lua(add)
    add("system", "uuid source", "ok" if os.path.exists("/dev/urandom") else "warn",
        "/dev/urandom (os.urandom)" if os.path.exists("/dev/urandom") else "no /dev/urandom: weaker UUIDs")
    level, detail = sandbox_boundary()
    add("system", "OS sandbox", level, detail)
    _tasks(home, add)
    return out


def _dirs(home: AgentHome, add: Any) -> None:
    for path, label in ((home.state_dir, "state/"), (home.approvals_dir, "state/pending_approvals/"),
                        (home.skills_agent, "skills/agent/"), (home.tasks_dir, "tasks/")):
        if not path.is_dir():
            add("home", label, "fatal", f"{path} missing; run `luallm-agent init`")
        elif not os.access(path, os.W_OK):
            add("home", label, "fatal", f"{path} is not writable")
        else:
            add("home", label, "ok", "writable")
    if not home.skills_allowed.is_dir():
        add("home", "skills/allowed/", "fatal", f"{home.skills_allowed} missing; run `luallm-agent init`")
    else:
        loose = [p.name for p in home.skills_allowed.glob("*.lua") if _writable_by_mode(p)]
        if loose:
            add("home", "skills/allowed/", "warn", f"writable skill files {', '.join(loose[:5])}; fix: chmod 444 "
                                                   f"{home.skills_allowed}/*.lua")
        else:
            add("home", "skills/allowed/", "ok", "files read-only (0444); the path policy refuses every write")
    audit = home.audit_path
    size = audit.stat().st_size if audit.exists() else 0
    add("home", "audit log", "ok" if os.access(home.state_dir, os.W_OK) else "fatal",
        f"{audit} ({size / 1e6:.1f} MB)")


def _paths(config: HomeConfig, add: Any) -> None:
    allowed = config.allowed_paths
    bad = [p for p in allowed if not Path(expand_user(p)).exists() and not any(c in p for c in "*?")]
    add("paths", "allowed paths", "warn" if bad else "ok",
        f"{len(allowed) - len(bad)}/{len(allowed)} exist" + (f"; missing: {', '.join(bad)}" if bad else ""))
    blocked = config.blocked_paths
    add("paths", "blocked paths", "ok", f"{len(blocked)} blocked ({', '.join(blocked[:6])})")


def _luallm(config: HomeConfig, add: Any) -> None:
    from agent.models.luallm import LuallmCLI

    binary = config.luallm_binary
    found = shutil.which(binary)
    if not found:
        needed = bool(config.section("model_selection")) or "providers" not in config.raw
        add("luallm", "luallm binary", "warn",
            f"{binary!r} not found on PATH" + ("; `run` needs it to find a model" if needed else ""))
        return
    cli = LuallmCLI(binary, command_timeout_s=10.0)
    try:
        commands = cli.help()
        add("luallm", "luallm binary", "ok", found)
        add("luallm", "luallm help --json", "ok", f"parseable ({len(commands)} commands found)")
        cli.require_commands()
        status = cli.status()
    except AgentError as exc:
        add("luallm", "luallm", "fatal", exc.message)
        return
    finally:
        cli.close()
    running = [s.model for s in status.servers if s.running]
    for s in status.servers:
        add("models", s.model, "ok" if s.running else "info",
            f"running on :{s.port}" if s.running else f"{s.state}")
    try:
        notes = cli.notes()
    except AgentError as exc:
        add("models", "notes", "warn", exc.message)
        notes = {}
    for name in running:
        if not (notes.get(name) and notes[name].content):
            add("notes", name, "info", f"no notes (add some with `{binary} notes add {name} \"...\"`)")
    table = config.section("model_selection")
    if not table:
        add("selection", "model_selection", "ok" if running else "warn",
            "empty: the first running model not flagged in its notes is used" if running
            else "empty and no model running: start one with `luallm start MODEL`")
    known = {s.model for s in status.servers}
    for task_type in table or (TASK_TYPES if running else ()):
        names = config.selection(task_type) or running
        flagged = [n for n in names if _flags(notes, n).unsuitable & {task_type, "all", "*"}]
        up = [n for n in names if n in running and n not in flagged]
        missing = [n for n in names if n not in known]
        level = "ok" if up else "warn"
        detail = f"{up[0]} running" if up else f"no usable model running ({', '.join(names)})"
        if flagged:
            detail += f"; luallm notes mark {', '.join(flagged)} unsuitable for {task_type} (skipped)"
        if missing:
            detail += f"; not known to luallm: {', '.join(missing)}"
        add("selection", task_type, level, detail)


def _flags(notes: dict[str, Any], model: str) -> Any:
    from agent.models.notes import parse_note

    note = notes.get(model)
    return parse_note(note.content if note else None)


def _lua(add: Any) -> None:
    try:
        from lupa import lua54

        version = lua54.LuaRuntime().eval("_VERSION")
        add("system", "Lua version", "ok", f"{version} (lupa; _ENV sandbox, no setfenv needed)")
    except Exception as exc:
        add("system", "Lua version", "fatal", f"lupa/Lua 5.4 unavailable: {exc}")


def _tasks(home: AgentHome, add: Any) -> None:
    from agent.supervised.approval_files import requests
    from agent.supervised.state import describe_current

    found = requests(home)
    waiting = [r.id for r in found if r.waiting]
    answered = [r.id for r in found if not r.waiting and r.answer is not None]
    add("tasks", "pending approvals", "warn" if waiting else "ok",
        f"{len(waiting)} waiting for a person ({', '.join(waiting[:3])}); see `luallm-agent approvals list`"
        if waiting else "none waiting for a person")
    if answered:
        add("tasks", "answered approvals", "info",
            f"{len(answered)} answered, applied by `luallm-agent run --resume` ({', '.join(answered[:3])})")

    level, detail = describe_current(home)
    add("tasks", "running task", level, detail)


_MARK = {"ok": "[ok]  ", "info": "[info]", "warn": "[warn]", "fatal": "[FAIL]"}


def render(checks: list[Check]) -> str:
    lines: list[str] = []
    section = None
    for c in checks:
        if c.section != section:
            section = c.section
            lines.append(f"{section}:")
        lines.append(f"  {_MARK[c.level]} {c.name}: {c.detail}")
    code = exit_code(checks)
    lines.append({0: "all checks pass", 2: "warnings only (exit 2)", 1: "fatal problems (exit 1)"}[code])
    return "\n".join(lines)
