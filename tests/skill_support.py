"""Helpers for skill tests: write skills into a temporary agent home, read its audit log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.audit import AuditLog
from agent.redact import Redactor
from agent.skills.home import SkillsHome


def header(name: str, *, deps: tuple[str, ...] = (), paths: tuple[str, ...] = ("**",), version: str = "1.0",
           commands: tuple[str, ...] = (), publics: tuple[str, ...] = ("run",)) -> str:
    def lst(items: tuple[str, ...]) -> str:
        return "{ " + ", ".join(json.dumps(i) for i in items) + " }"

    return (f'---@skill {{\n---  name = "{name}",\n---  version = "{version}",\n'
            f'---  description = "test skill {name}",\n---  dependencies = {lst(deps)},\n'
            f"---  paths = {lst(paths)},\n---  urls = {{}},\n---  commands = {lst(commands)},\n"
            f"---  public_functions = {lst(publics)},\n---}}\n")


def write_skill(home: SkillsHome, tier: str, name: str, body: str = "local M = {}\nfunction M.run() return 1 end\nreturn M\n",
                test: str | None = None, **meta: Any) -> Path:
    directory = home.tier_dir(tier)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.lua"
    path.write_text(header(name, **meta) + body)
    if test is not None:
        (directory / f"{name}_test.lua").write_text(
            f'local test = require("luallm_test")\nlocal {name} = require("{name}")\n{test}\ntest.run_all()\n')
    return path


def audit_of(home: SkillsHome) -> AuditLog:
    return AuditLog(home.audit_path, Redactor(), stderr=False)


def audit_events(home: SkillsHome, event: str) -> list[dict[str, Any]]:
    if not home.audit_path.is_file():
        return []
    rows = [json.loads(line) for line in home.audit_path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("event") == event]
