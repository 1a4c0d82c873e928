"""Drive agent processes through a command script the way lorch does, reporting as things happen.

One `luallm-agent stdio` process per role, spawned on first use; each command is written to its
role's process and the conductor follows that process's messages, one by one as they arrive,
until the command's terminal event (or the agent's exit, or the command's deadline). Every
message, and every diagnostic line the agent writes to stderr, is handed to a `ScriptView` at
once, so a person sees progress live. Used by `luallm-agent replay` and `demo`, and by tests.
"""

from __future__ import annotations

import collections
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from agent.clock import seconds_until
from agent.protocol import ROLES, TERMINAL_EVENTS

__all__ = ["AgentProcess", "CommandResult", "ScriptError", "ScriptView", "load_script", "run_script",
           "is_terminal", "AUDIT_PREFIX"]

_REJECTIONS = {"invalid_command", "unsupported_action", "message_too_large"}
AUDIT_PREFIX = b"[luallm-agent] "  # how the agent's audit lines start on its stderr
_READY_TIMEOUT_S = 30.0
_MAX_WAIT_S = 1800.0  # lorch's own per-command limit


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
    """One agent subprocess with a reader thread turning its stdout lines into messages.

    With `on_stderr`, the agent's stderr is read line by line too and each line handed to it.
    """

    def __init__(self, role: str, argv: list[str], env: dict[str, str] | None = None,
                 stderr: Any = None, on_stderr: Callable[[bytes], None] | None = None) -> None:
        self.role = role
        if on_stderr is not None:
            stderr = subprocess.PIPE
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr if stderr is not None else subprocess.DEVNULL, env=env)
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.raw_lines: list[bytes] = []
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._stderr_done = threading.Event()
        if on_stderr is None:
            self._stderr_done.set()
        threading.Thread(target=self._read, daemon=True).start()
        if on_stderr is not None:
            threading.Thread(target=self._read_stderr, args=(on_stderr,), daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw_lines.append(line)
            try:
                self.messages.put(orjson.loads(line))
            except orjson.JSONDecodeError:
                self.messages.put({"kind": "garbage", "line": line.decode("utf-8", "replace")})
        self.messages.put(None)

    def _read_stderr(self, on_stderr: Callable[[bytes], None]) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip())
            on_stderr(line)
        self._stderr_done.set()

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

    def exit_code(self, wait: float) -> int | None:
        """The process's exit code, waiting up to `wait` seconds for it to end; None if still running."""
        try:
            return self.proc.wait(wait) if wait > 0 else self.proc.poll()
        except subprocess.TimeoutExpired:
            return None

    def last_words(self) -> str:
        """The agent's last stderr line that is not an audit record (e.g. a one-line start-up error)."""
        self._stderr_done.wait(1.0)  # the reader may still be on the final lines
        for line in reversed(self.stderr_tail):
            if line and not line.startswith(AUDIT_PREFIX.decode()):
                return line
        return ""

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


# -- command scripts ---------------------------------------------------------------------------
class ScriptError(ValueError):
    """A command script that cannot be replayed; the message names the file and line."""


def load_script(path: Path) -> list[tuple[bytes, dict[str, Any]]]:
    """Each non-blank line of an NDJSON command script, checked enough to route and follow it."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise ScriptError(f"{path} is a directory, not an NDJSON file of commands") from None
    except OSError as exc:
        raise ScriptError(f"cannot read {path}: {exc.strerror or exc}") from None
    script = []
    for n, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{path}:{n}"
        try:
            cmd = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ScriptError(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(cmd, dict):
            raise ScriptError(f"{where}: a command must be a JSON object, got {type(cmd).__name__}")
        to = cmd.get("to")
        role = to.get("agent_type") if isinstance(to, dict) else None
        if role not in ROLES:
            raise ScriptError(f"{where}: to.agent_type must be one of {', '.join(ROLES)}, got {role!r}")
        for key in ("task_id", "action"):
            if not isinstance(cmd.get(key), str) or not cmd[key]:
                raise ScriptError(f"{where}: {key} must be a non-empty string")
        script.append((raw, cmd))
    if not script:
        raise ScriptError(f"{path} has no commands")
    return script


@dataclass
class CommandResult:
    """How one command of the script ended."""

    role: str
    action: str
    task_id: str
    ok: bool
    ended_with: str   # the terminal event's name; "" when there was none
    reason: str       # why it did not succeed; "" when it did
    seconds: float


class ScriptView(Protocol):
    """What a person sees while a script runs; every method is called as things happen."""

    def command_started(self, role: str, cmd: dict[str, Any]) -> None: ...
    def message(self, role: str, msg: dict[str, Any]) -> None: ...
    def agent_output(self, role: str, line: bytes) -> None: ...
    def tick(self) -> None: ...
    def command_done(self, result: CommandResult) -> None: ...


def _outcome(msg: dict[str, Any]) -> tuple[bool, str]:
    """Did the terminal message mean success? If not, why."""
    payload = msg.get("payload") or {}
    if msg.get("event") == "error":
        return False, f"error {payload.get('code')}: {payload.get('message')}"
    if msg.get("status") == "failed":
        err = payload.get("error") or {}
        why = f"{err.get('code')}: {err.get('message')}" if err else str(payload.get("summary", ""))
        return False, f"{msg.get('event')} status failed: {why}"
    return True, ""


class _Conductor:
    def __init__(self, agent_argv: Callable[[str], list[str]], view: ScriptView) -> None:
        self.agent_argv = agent_argv
        self.view = view
        self.agents: dict[str, AgentProcess] = {}
        self.dead: dict[str, str] = {}  # role → why its agent cannot take commands

    def agent(self, role: str) -> AgentProcess | None:
        if role in self.dead:
            return None
        if role in self.agents:
            return self.agents[role]
        proc = AgentProcess(role, self.agent_argv(role), on_stderr=lambda line: self.view.agent_output(role, line))
        self.agents[role] = proc
        end = time.monotonic() + _READY_TIMEOUT_S
        while True:
            msg = self._next(proc, end)
            if msg == "timeout" or msg is None:
                code = proc.exit_code(5.0 if msg is None else 0.0)
                why = (f"the {role} agent exited with code {code} before it was ready" if code is not None
                       else f"the {role} agent was not ready within {_READY_TIMEOUT_S:.0f} s")
                last = proc.last_words()
                self.dead[role] = why + (f": {last}" if last else "")
                return None
            assert isinstance(msg, dict)
            self.view.message(role, msg)
            if msg.get("kind") == "heartbeat" and msg.get("status") == "ready":
                return proc

    def _next(self, proc: AgentProcess, end: float) -> dict[str, Any] | None | str:
        """The next message, None when the agent's stdout closed, or "timeout"; ticks the view meanwhile."""
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return "timeout"
            try:
                msg = proc.messages.get(timeout=min(0.25, left))
            except queue.Empty:
                self.view.tick()
                continue
            if msg is None:
                proc.messages.put(None)  # keep the EOF marker for later callers
            return msg

    def run(self, raw: bytes, cmd: dict[str, Any]) -> CommandResult:
        role, task_id = cmd["to"]["agent_type"], cmd["task_id"]
        started = time.monotonic()

        def result(ok: bool, ended_with: str, reason: str) -> CommandResult:
            return CommandResult(role, str(cmd["action"]), task_id, ok, ended_with, reason,
                                 round(time.monotonic() - started, 3))

        self.view.command_started(role, cmd)
        proc = self.agent(role)
        if proc is None:
            return result(False, "", self.dead[role])
        try:
            proc.send(raw)
        except (BrokenPipeError, OSError):
            pass  # the agent is gone; its exit is reported below
        # Like lorch: wait until the command's deadline (at most 30 minutes), never forever.
        wait = max(1.0, min(seconds_until(cmd.get("deadline"), _MAX_WAIT_S), _MAX_WAIT_S)) + 10.0
        end = started + wait
        while True:
            msg = self._next(proc, end)
            if msg == "timeout":
                return result(False, "", f"no terminal event within {wait:.0f} s")
            if msg is None:
                code = proc.exit_code(5.0)
                self.dead[role] = f"the {role} agent exited (code {code})"
                last = proc.last_words()
                return result(False, "", f"the {role} agent exited (code {code}) without a terminal event"
                                         + (f": {last}" if last else ""))
            assert isinstance(msg, dict)
            self.view.message(role, msg)
            if is_terminal(role, msg, task_id):
                ok, why = _outcome(msg)
                return result(ok, str(msg.get("event")), why)

    def close(self) -> None:
        for proc in self.agents.values():
            proc.close()


def run_script(script: list[tuple[bytes, dict[str, Any]]], agent_argv: Callable[[str], list[str]],
               view: ScriptView) -> list[CommandResult]:
    """Send each command to its role's agent (started by `agent_argv(role)`) and follow it to its end."""
    conductor = _Conductor(agent_argv, view)
    results = []
    try:
        for raw, cmd in script:
            res = conductor.run(raw, cmd)
            results.append(res)
            view.command_done(res)
    finally:
        conductor.close()
    return results


def agent_command(role: str, workspace: str, options: list[str], *, heartbeat_interval: float = 5.0,
                  test_command: str | None = None, scripted_dir: str | None = None) -> list[str]:
    """The argv of one agent process for a script run (reviewer/spec failures do not end the script)."""
    argv = [sys.executable, "-m", "agent", "stdio", "--role", role, "--workspace", workspace,
            "--heartbeat-interval", str(heartbeat_interval), "--keep-serving-on-failure", *options]
    if test_command and "--test-command" not in options:
        argv += ["--test-command", test_command]
    if scripted_dir and (Path(scripted_dir) / f"{role}.json").is_file():
        argv += ["--scripted-replies", str(Path(scripted_dir) / f"{role}.json")]
    return argv
