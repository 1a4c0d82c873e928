"""Helpers for supervised-mode end-to-end tests: a fresh home, a fake luallm on PATH, the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema

ROOT = Path(__file__).resolve().parents[1]
FAKE = Path(__file__).resolve().parent / "supervised" / "fake_luallm.py"
AUDIT_SCHEMA = json.loads((ROOT / "schemas" / "supervised-audit.schema.json").read_text())

# A plan that spins (in the Lua sandbox) until go.txt exists: a node that is mid-run on demand.
WAIT_FOR_GO = ("function run(ctx)\n  for i = 1, 900 do\n    local r = tools.read('go.txt')\n"
               "    if type(r) == 'string' then return 'went' end\n    local x = 0\n"
               "    for j = 1, 3000000 do x = x + j end\n  end\n  return 'gave up'\nend\n")


class World:
    """One test's agent home, workspace, fake-luallm state and scripted replies."""

    def __init__(self, tmp: Path, *, luallm: bool = True, installed: tuple[str, ...] = ("m1",),
                 running: tuple[str, ...] = ("m1",)) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.ws = tmp / "ws"
        self.ws.mkdir()
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.state = tmp / "luallm-world.json"
        self.state.write_text(json.dumps({"installed": list(installed),
                                          "running": {m: 8001 + i for i, m in enumerate(running)}, "notes": {}}))
        if luallm:
            shim = self.bin / "luallm"
            shim.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
            shim.chmod(0o755)
        self._replies = 0

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("LUALLM_AGENT_", "OPENAI_"))}
        return {**keep, "PYTHONPATH": str(ROOT), "PATH": f"{self.bin}:/usr/bin:/bin",
                "FAKE_LUALLM_STATE": str(self.state), "LUALLM_AGENT_HOME": str(self.home)}

    def replies(self, replies: list[Any]) -> Path:
        self._replies += 1
        path = self.tmp / f"replies-{self._replies}.json"
        path.write_text(json.dumps([r if isinstance(r, str) else json.dumps(r) for r in replies]))
        return path

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "agent", *args]

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*args), capture_output=True, text=True, env=self.env(), cwd=self.ws,
                              stdin=subprocess.DEVNULL, timeout=timeout)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.env(), cwd=self.ws, stdin=subprocess.DEVNULL)

    def init(self, config: dict[str, Any] | None = None) -> None:
        """`init`, with `config` merged into the defaults first (init keeps an existing config.json)."""
        if config is not None:
            from agent.supervised.home import DEFAULT_CONFIG

            merged = json.loads(json.dumps(DEFAULT_CONFIG))
            for key, value in config.items():
                merged[key] = {**merged[key], **value} if isinstance(value, dict) and key in merged and \
                    key != "model_selection" else value
            self.home.mkdir(parents=True, exist_ok=True)
            (self.home / "config.json").write_text(json.dumps(merged))
        done = self.cli("init")
        assert done.returncode == 0, done.stderr

    def current(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.home / "state" / "current_task.json").read_text())
        return data

    def task_dir(self) -> Path:
        return self.home / "tasks" / self.current()["id"]

    def audit(self) -> list[dict[str, Any]]:
        path = self.home / "state" / "audit_log.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for row in rows:
            jsonschema.validate(row, AUDIT_SCHEMA, format_checker=jsonschema.FormatChecker())
        return rows

    def events(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.audit() if r["event"] == name]

    def start_model(self, model: str) -> None:
        started = subprocess.run([str(self.bin / "luallm"), "start", model], capture_output=True, text=True,
                                 env=self.env(), timeout=30)
        assert started.returncode == 0, started.stdout


def invalid_audit_lines(root: Path) -> list[str]:
    """'file:line: problem' for each audit line under `root` that is not one schema-valid entry."""
    validator = jsonschema.Draft202012Validator(AUDIT_SCHEMA, format_checker=jsonschema.FormatChecker())
    bad: list[str] = []
    for path in sorted(root.rglob("audit_log.jsonl*")):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            try:
                entry = json.loads(line)
            except ValueError as exc:
                bad.append(f"{path}:{number}: not JSON ({exc})")
                continue
            bad += [f"{path}:{number}: {e.message}" for e in validator.iter_errors(entry)]
    return bad


def graph(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"nodes": list(nodes)}


def transitions_match(world: World) -> None:
    """Every transition is both in current_task.json and in the audit log, in the same order."""
    saved = [(t["from"], t["to"]) for t in world.current()["transitions"]]
    logged = [(e["data"]["from_state"], e["data"]["to_state"]) for e in world.events("state_transition")
              if e["task_id"] == world.current()["id"]]
    assert saved == logged and saved, (saved, logged)


# A skill draft as a model writes it (the skill and its test, fenced), counting words right.
WORD_COUNT = '''```lua
---@skill {
---  name = "word_count",
---  version = "1.0",
---  description = "Count the words in a text file",
---  paths = { "**" },
---  public_functions = { "run" },
---}
local M = {}
function M.run(args)
  local f = assert(io.open(args.path))
  local text = f:read("a")
  f:close()
  local n = 0
  for _ in text:gmatch("%S+") do n = n + 1 end
  return { words = n }
end
return M
```

```lua
local test = require("luallm_test")
local word_count = require("word_count")
test.case("counts words", function()
  local f = assert(io.open("t.txt", "w")); f:write("one two  three\\n"); f:close()
  test.eq(word_count.run({ path = "t.txt" }).words, 3)
end)
test.run_all()
```
'''
