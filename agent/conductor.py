"""Drive agent processes through a command script the way lorch does, and print the transcript.

One `luallm-agent stdio` process per role, spawned on first use; each command is written to its
role's process and the conductor waits for that role's terminal event before the next command.
Used by `luallm-agent replay` and `luallm-agent demo`, and by the end-to-end tests.
"""

from __future__ import annotations

import argparse
import os
import queue
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, TextIO

import orjson

from agent.clock import seconds_until
from agent.protocol import TERMINAL_EVENTS

__all__ = ["AgentProcess", "run_script", "run_demo", "FIXTURES", "is_terminal"]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
_REJECTIONS = {"invalid_command", "unsupported_action", "message_too_large"}


def is_terminal(role: str, msg: dict[str, Any], task_id: str) -> bool:
    """Does `msg` end the command for `task_id` from lorch's point of view?"""
    if msg.get("kind") != "event" or msg.get("task_id") != task_id:
        return False
    name = msg.get("event")
    if name in TERMINAL_EVENTS[role]:
        return True
    if name == "error":
        code = (msg.get("payload") or {}).get("code")
        # Only the builder follows an error with its own terminal event (builder.completed).
        return role != "builder" or code in _REJECTIONS
    return False


class AgentProcess:
    """One agent subprocess with a reader thread turning its stdout lines into messages."""

    def __init__(self, role: str, argv: list[str], env: dict[str, str] | None = None,
                 stderr: Any = None) -> None:
        self.role = role
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr if stderr is not None else subprocess.DEVNULL, env=env)
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.raw_lines: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw_lines.append(line)
            try:
                self.messages.put(orjson.loads(line))
            except orjson.JSONDecodeError:
                self.messages.put({"kind": "garbage", "line": line.decode("utf-8", "replace")})
        self.messages.put(None)

    def send(self, obj: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        data = obj if isinstance(obj, bytes) else orjson.dumps(obj)
        self.proc.stdin.write(data if data.endswith(b"\n") else data + b"\n")
        self.proc.stdin.flush()

    def until(self, pred: Any, timeout: float) -> list[dict[str, Any]]:
        """Messages up to and including the first one matching `pred` (or until exit/timeout)."""
        got: list[dict[str, Any]] = []
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.role}: no matching message within {timeout}s; got {len(got)} messages")
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if msg is None:
                self.messages.put(None)  # keep the EOF marker for later callers
                return got
            got.append(msg)
            if pred(msg):
                return got

    def close(self, timeout: float = 10.0) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


_PASSED_THROUGH = [("--answers", "answers"), ("--max-tokens", "max_tokens"), ("--model-timeout", "model_timeout"),
                   ("--prompt-budget", "prompt_budget"), ("--file-budget", "file_budget"),
                   ("--max-repairs", "max_repairs"), ("--plan-wall-s", "plan_wall_s"),
                   ("--plan-memory-mb", "plan_memory_mb"), ("--plan-run-allow", "plan_run_allow"),
                   ("--max-review-rounds", "max_review_rounds"), ("--max-spec-rounds", "max_spec_rounds"),
                   ("--test-repairs", "test_repairs")]
_DEFAULTS: dict[str, object] = {"answers": "auto", "plan_run_allow": ""}


def _agent_argv(role: str, args: argparse.Namespace, workspace: str) -> list[str]:
    argv = [sys.executable, "-m", "agent", "stdio", "--role", role, "--workspace", workspace,
            "--heartbeat-interval", str(args.heartbeat_interval or 5.0), "--keep-serving-on-failure"]
    for flag, value in (("--replay", args.replay), ("--record", args.record), ("--model", args.model),
                        ("--base-url", args.base_url), ("--config", args.config),
                        ("--spec-path", args.spec_path)):
        if value:
            argv += [flag, str(value)]
    # Pass every agent option the script was given through to each agent process.
    for flag, attr in _PASSED_THROUGH:
        value = getattr(args, attr, None)
        if value is not None and value != _DEFAULTS.get(attr):
            argv += [flag, str(value)]
    if role == "builder" and args.test_command:
        argv += ["--test-command", args.test_command]
    scripted = getattr(args, "scripted_dir", None)
    if scripted and (Path(scripted) / f"{role}.json").is_file():
        argv += ["--scripted-replies", str(Path(scripted) / f"{role}.json")]
    return argv


def _say(out: TextIO, text: str) -> None:
    """The transcript goes to the caller's terminal (these commands are not the stdio protocol)."""
    out.write(text + "\n")
    out.flush()


def _describe(msg: dict[str, Any]) -> str:
    p = msg.get("payload") or {}
    name = msg.get("event")
    if name == "artifact.produced":
        a = (msg.get("artifacts") or [{}])[0]
        return f"artifact.produced  {a.get('path')}  {str(a.get('sha256', ''))[:19]}…  {a.get('size')} B"
    if name == "builder.completed":
        t = p.get("tests") or {}
        return f"builder.completed  tests={t.get('status')} ({t.get('summary')})  {p.get('summary', '')}"
    if name == "review.completed":
        return f"review.completed  status={msg.get('status')}  {p.get('summary', '')}  findings={len(p.get('findings', []))}"
    if name == "error":
        return f"error  {p.get('code')}: {p.get('message')}"
    if name == "orchestration.proposed_tasks":
        tasks = ", ".join(f"{t['id']} {t['title']!r}" for t in p.get("derived_tasks", []))
        plan = (p.get("plan_candidates") or [{}])[0].get("path")
        return f"orchestration.proposed_tasks  plan={plan}  tasks: {tasks}"
    if name == "orchestration.needs_clarification":
        return f"orchestration.needs_clarification  questions: {p.get('questions')}"
    if name and name.startswith("spec."):
        return f"{name}  {p.get('summary', '')}  sections={p.get('edited_sections')}"
    return f"{name}  {orjson.dumps(p).decode()[:200]}"


def run_script(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Send each command of the script to its role's agent; print what came back."""
    out = out or sys.stdout
    workspace = str(Path(args.workspace or os.getcwd()).resolve())
    lines = [ln for ln in Path(args.commands).read_bytes().splitlines() if ln.strip()]
    agents: dict[str, AgentProcess] = {}
    failures = 0
    try:
        for raw in lines:
            cmd = orjson.loads(raw)
            role = cmd["to"]["agent_type"]
            if role not in agents:
                agents[role] = AgentProcess(role, _agent_argv(role, args, workspace))
                agents[role].until(lambda m: m.get("kind") == "heartbeat" and m.get("status") == "ready", 30)
            agent = agents[role]
            if not args.json:
                _say(out, f"→ {role:<15} {cmd['action']} {cmd['task_id']}")
            agent.send(raw)
            # Like lorch: wait until the command's deadline (at most 30 minutes), never forever.
            wait = max(1.0, min(seconds_until(cmd.get("deadline"), 1800.0), 1800.0)) + 10.0
            try:
                got = agent.until(lambda m, r=role, t=cmd["task_id"]: is_terminal(r, m, t), wait)
            except TimeoutError:
                failures += 1
                _say(out, f"    ✗ {role}: no terminal event within {wait:.0f}s")
                continue
            for msg in got:
                if args.json:
                    _say(out, orjson.dumps(msg).decode())
                elif msg.get("kind") == "event":
                    _say(out, f"    ← {_describe(msg)}")
            if not got or not is_terminal(role, got[-1], cmd["task_id"]):
                failures += 1
                _say(out, f"    ✗ {role} ended without a terminal event")
            elif got[-1].get("event") == "error":
                failures += 1
    finally:
        for agent in agents.values():
            agent.close()
    if not args.json:
        _say(out, f"\n{len(lines)} commands, {failures} without a successful terminal event; workspace: {workspace}")
    return 0 if failures == 0 else 1


def run_demo(args: argparse.Namespace) -> int:
    """Copy the demo workspace, then replay the demo script on recorded responses."""
    demo = FIXTURES / "demo"
    target = Path(args.workspace) if args.workspace else Path(tempfile.mkdtemp(prefix="luallm-demo-"))
    shutil.copytree(demo / "workspace", target, dirs_exist_ok=True)
    ns = argparse.Namespace(
        commands=str(demo / "commands.ndjson"), workspace=str(target), json=args.json,
        replay=str(demo / "responses.jsonl"), record=None, model=None, base_url=None, config=None,
        spec_path=None, heartbeat_interval=5.0, scripted_dir=None,
        test_command=f"{shlex.quote(sys.executable)} -m unittest discover -s tests",
        test_repairs=0)  # the demo shows lorch's review loop, not the builder fixing its own test failure
    _say(sys.stdout, f"luallm-agent demo: workspace {target} (recorded model responses, no network)\n")
    code = run_script(ns)
    _say(sys.stdout, f"\nInspect it: ls -R {target}   (audit log: {target}/logs/luallm-agent/audit.jsonl)")
    return code
