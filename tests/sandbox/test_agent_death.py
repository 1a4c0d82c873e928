"""Children die with the agent: after `kill -9` of a real agent process, no plan worker, launcher
or command it started is alive 1 s later; a restarted agent clears what the dead one left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest
from sandbox_support import pids_with_marker
from support import make_command

MARKER_VAR = "LUALLM_DEATH_TEST_MARKER"
PLAN = ('```lua\nfunction run(context)\n  tools.run("sleep 30", {timeout_ms = 30000})\n'
        '  return {status = "approved", summary = "slept", findings = {}}\nend\n```')


def _cmdlines(marker: str) -> dict[int, str]:
    out = {}
    for pid in pids_with_marker(marker):
        try:
            out[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
    return out


def _wait_for(pred, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


@pytest.mark.parametrize("how", ["plan_command", "test_command"])
def test_kill_9_of_the_agent_leaves_no_child_alive_after_1s(spawn, how):
    marker = uuid.uuid4().hex
    # a reviewer's plan runs a command; the builder runs the test command (before asking for anything)
    args = ["--answers", "plan", "--plan-wall-s", "60", "--plan-run-allow", "sleep"] if how == "plan_command" else \
        ["--test-command", "sleep 30"]
    role, action = ("reviewer", "review") if how == "plan_command" else ("builder", "implement")
    agent = spawn(role, *args, replies=[PLAN if how == "plan_command" else "calc.py\n```\nX = 1\n```\n"],
                  env={MARKER_VAR: marker})
    agent.send(make_command(action))
    assert _wait_for(lambda: any(c.startswith("sleep 30") for c in _cmdlines(marker).values()), 30), \
        _cmdlines(marker)
    before = _cmdlines(marker)
    assert len(before) >= 3, before   # the agent, a launcher, the command (and the warm worker)
    agent.proc.send_signal(signal.SIGKILL)
    agent.proc.wait()
    killed_at = time.monotonic()
    assert _wait_for(lambda: not _cmdlines(marker), 1.0), _cmdlines(marker)
    assert time.monotonic() - killed_at <= 1.0


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_restarted_agent_removes_stale_temp_files_it_owns(spawn, workspace, tmp_path):
    dead = _dead_pid()
    stale = workspace / "src" / f".main.py.tmp.{dead}.a1b2c3d4"
    stale.parent.mkdir()
    stale.write_text("half written")
    live = workspace / f".notes.md.tmp.{os.getpid()}.0badf00d"   # a live writer's file stays
    live.write_text("being written")
    unrelated = workspace / ".config.tmp"
    unrelated.write_text("not ours")
    sbx = Path(os.environ.get("TMPDIR", "/tmp")) / f"luallm-sbx-{dead}-leftover"
    sbx.mkdir()
    (sbx / "tmp").mkdir()
    agent = spawn("builder")
    audit = workspace / "logs" / "luallm-agent" / "audit.jsonl"
    assert _wait_for(lambda: audit.exists() and b'"stale_removed"' in audit.read_bytes(), 15)
    assert not stale.exists() and live.exists() and unrelated.exists() and not sbx.exists()
    entry = next(orjson.loads(line) for line in audit.read_bytes().splitlines() if b'"stale_removed"' in line)
    assert entry["temp_files"] == [f"src/.main.py.tmp.{dead}.a1b2c3d4"]
    agent.close()


def test_the_boundary_in_force_is_reported_at_start(spawn, workspace, tmp_path):
    agent = spawn("reviewer")
    audit = workspace / "logs" / "luallm-agent" / "audit.jsonl"
    assert _wait_for(lambda: audit.exists() and b'"event":"sandbox"' in audit.read_bytes(), 15)
    agent.close()
    stderr = (tmp_path / "stderr-0.txt").read_text()
    line = next(ln for ln in stderr.splitlines() if '"event":"sandbox"' in ln)
    assert "sandbox: " in line and '"mode":' in line
