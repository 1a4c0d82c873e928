"""Replaying a fixture file of commands through stdin: every command is answered, or reported.

`--drain` (automatic when stdin is a regular file) finishes every command received before EOF.
Without it EOF stops promptly, as lorch expects, but a command received and not run is never
silent: stderr and the audit log name it and the flag that would have run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from support import assert_wire_valid, make_command, write_replies

TASKS = ["T-1", "T-2", "T-3"]


def _answer(i: int) -> str:
    return f"f{i}.txt\n```\n{i}\n```\n"


@pytest.fixture
def fixture_file(tmp_path: Path) -> Path:
    path = tmp_path / "commands.ndjson"
    path.write_bytes(b"".join(orjson.dumps(make_command("implement", task_id=t)) + b"\n" for t in TASKS))
    return path


def _argv(tmp_path: Path, *extra: str) -> list[str]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    replies = write_replies(tmp_path / "replies.json", [_answer(i) for i in range(len(TASKS))])
    return [sys.executable, "-m", "agent", "stdio", "--role", "builder", "--workspace", str(ws),
            "--scripted-replies", str(replies), *extra]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LUALLM_AGENT_"))}


def _completed(stdout: bytes) -> list[str]:
    msgs = [orjson.loads(line) for line in stdout.splitlines()]
    for m in msgs:
        assert_wire_valid(m)
    return [m["task_id"] for m in msgs if m.get("event") == "builder.completed" and m.get("status") != "failed"]


def test_regular_file_on_stdin_answers_every_command(tmp_path: Path, fixture_file: Path) -> None:
    with fixture_file.open("rb") as stdin:
        proc = subprocess.run(_argv(tmp_path), stdin=stdin, capture_output=True, env=_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _completed(proc.stdout) == TASKS
    assert sorted(p.name for p in (tmp_path / "ws").glob("f*.txt")) == ["f0.txt", "f1.txt", "f2.txt"]


def test_pipe_with_drain_answers_every_command(tmp_path: Path, fixture_file: Path) -> None:
    proc = subprocess.run(_argv(tmp_path, "--drain"), input=fixture_file.read_bytes(), capture_output=True,
                          env=_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _completed(proc.stdout) == TASKS


def test_pipe_without_drain_reports_each_command_it_did_not_run(tmp_path: Path, fixture_file: Path) -> None:
    proc = subprocess.run(_argv(tmp_path), input=fixture_file.read_bytes(), capture_output=True, env=_env(),
                          timeout=120)
    assert proc.returncode == 0
    answered = set(_completed(proc.stdout))
    audit = [json.loads(line) for line in (tmp_path / "ws" / "logs" / "luallm-agent" / "audit.jsonl").read_text().splitlines()]
    not_run = {e["task_id"]: e for e in audit if e["event"] == "command_not_run"}
    # Every command is either answered or reported: none is dropped silently.
    assert answered | set(not_run) == set(TASKS) and not answered & set(not_run)
    assert not_run, "EOF right after three commands should leave at least one not run"
    for task, entry in not_run.items():
        assert "--drain" in entry["message"]
        assert f"command {task} (implement)".encode() in proc.stderr
    assert proc.stderr.count(b"--drain") >= len(not_run)
