"""What `replay` and `demo` show a person while a command script runs.

Every event is printed the moment it arrives. On a terminal a live status line (rich) shows the
current command, its elapsed time and the agent's last sign of life (heartbeat, progress, model
call); when stdout is not a terminal the same facts come as a plain line every `still_every`
seconds of silence, so a log file shows progress too. `--json` prints every message as it is.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

import orjson

from agent.conductor import AUDIT_PREFIX, CommandResult, run_script

__all__ = ["PlainView", "JsonView", "LiveView", "make_view", "describe", "summary_lines", "run_and_report"]


def describe(msg: dict[str, Any]) -> str:
    """One line for an event."""
    p = msg.get("payload") or {}
    name = msg.get("event")
    if name == "artifact.produced":
        a = (msg.get("artifacts") or [{}])[0]
        return f"artifact.produced  {a.get('path')}  {str(a.get('sha256', ''))[:19]}…  {a.get('size')} B"
    if name == "builder.progress":
        return f"builder.progress  {p.get('stage', '')}: {p.get('message', '')}"
    if name == "builder.completed":
        t = p.get("tests") or {}
        return f"builder.completed  tests={t.get('status')} ({t.get('summary')})  {p.get('summary', '')}"
    if name == "review.completed":
        return f"review.completed  status={msg.get('status')}  {p.get('summary', '')}  findings={len(p.get('findings', []))}"
    if name == "error":
        return f"error  {p.get('code')}: {p.get('message')}"
    if name == "orchestration.proposed_tasks":
        tasks = ", ".join(f"{t.get('id')} {t.get('title')!r}" for t in p.get("derived_tasks", []))
        plan = (p.get("plan_candidates") or [{}])[0].get("path")
        return f"orchestration.proposed_tasks  plan={plan}  tasks: {tasks}"
    if name == "orchestration.needs_clarification":
        return f"orchestration.needs_clarification  questions: {p.get('questions')}"
    if name and name.startswith("spec."):
        return f"{name}  {p.get('summary', '')}  sections={p.get('edited_sections')}"
    return f"{name}  {orjson.dumps(p).decode()[:200]}"


def _activity(entry: dict[str, Any]) -> str | None:
    """A short text for an agent's audit line worth showing as its last activity, else None."""
    kind = entry.get("event")
    if kind in ("log", "progress"):
        return str(entry.get("message", ""))[:120]
    if kind == "plan_log":
        return f"plan: {str(entry.get('message', ''))[:110]}"
    if kind == "model_call":
        if entry.get("outcome") != "ok":
            return f"model call failed: {entry.get('error')}"
        ms = entry.get("latency_ms")
        took = f" in {ms / 1000:.1f} s" if isinstance(ms, int | float) else ""
        return f"model {entry.get('model', '?')} answered{took}"
    if kind == "answer_rejected":
        return f"answer rejected ({entry.get('code')}), asking again"
    return None


def summary_lines(results: list[CommandResult], workspace: str) -> list[str]:
    failed = [r for r in results if not r.ok]
    lines = [f"{len(results)} commands, {len(failed)} without a successful terminal event; workspace: {workspace}"]
    for r in failed:
        lines.append(f"  ✗ {r.task_id} {r.action} ({r.role}): {r.reason}")
    return lines


class PlainView:
    """A transcript in plain lines, written as things happen (stdout not a terminal)."""

    def __init__(self, out: TextIO, still_every: float = 15.0) -> None:
        self.out = out
        self.still_every = still_every
        self.lock = threading.Lock()
        self.current: str = ""
        self.started = 0.0
        self.last_output = 0.0
        self.last_heartbeat: tuple[float, str] | None = None
        self.last_activity = ""

    def say(self, text: str) -> None:
        with self.lock:
            self.out.write(text + "\n")
            self.out.flush()
            self.last_output = time.monotonic()

    def status(self) -> str:
        """Current command, elapsed time, last heartbeat and last activity, in one line."""
        if not self.current:
            return "starting"
        now = time.monotonic()
        parts = [self.current, f"{now - self.started:.0f} s"]
        if self.last_heartbeat:
            at, state = self.last_heartbeat
            parts.append(f"heartbeat {state} {now - at:.0f} s ago")
        if self.last_activity:
            parts.append(self.last_activity)
        return " · ".join(parts)

    # -- ScriptView -------------------------------------------------------------------------
    def command_started(self, role: str, cmd: dict[str, Any]) -> None:
        self.current = f"{role} {cmd.get('action')} {cmd.get('task_id')}"
        self.started = time.monotonic()
        self.last_heartbeat, self.last_activity = None, ""
        self.say(f"→ {role:<15} {cmd.get('action')} {cmd.get('task_id')}")

    def message(self, role: str, msg: dict[str, Any]) -> None:
        kind = msg.get("kind")
        if kind == "heartbeat":
            self.last_heartbeat = (time.monotonic(), str(msg.get("status")))
        elif kind == "log":
            self.last_activity = str(msg.get("message", ""))[:120]
        elif kind == "event":
            self.say(f"    ← {describe(msg)}")
        elif kind == "garbage":
            self.say(f"    ! not JSON on the {role} agent's stdout: {str(msg.get('line', ''))[:200]}")

    def agent_output(self, role: str, line: bytes) -> None:
        if not line.startswith(AUDIT_PREFIX):
            return
        try:
            entry = orjson.loads(line[len(AUDIT_PREFIX):])
        except orjson.JSONDecodeError:
            return
        if isinstance(entry, dict) and (text := _activity(entry)):
            self.last_activity = text

    def tick(self) -> None:
        if self.current and time.monotonic() - self.last_output >= self.still_every:
            self.say(f"    … {self.status()}")

    def command_done(self, result: CommandResult) -> None:
        mark = "✓" if result.ok else "✗"
        detail = "" if result.ok else f": {result.reason}"
        self.say(f"    {mark} {result.ended_with or 'no terminal event'} after {result.seconds:.1f} s{detail}")
        self.current = ""

    def close(self) -> None:
        pass


class JsonView(PlainView):
    """Every message from the agents as one JSON line, as it arrives; nothing else on stdout."""

    def command_started(self, role: str, cmd: dict[str, Any]) -> None:
        self.current = f"{role} {cmd.get('action')} {cmd.get('task_id')}"

    def message(self, role: str, msg: dict[str, Any]) -> None:
        self.say(orjson.dumps(msg).decode())

    def tick(self) -> None:
        pass

    def command_done(self, result: CommandResult) -> None:
        self.current = ""


class LiveView(PlainView):
    """Events printed above a live status line that rich redraws several times a second."""

    def __init__(self, out: TextIO) -> None:
        super().__init__(out)
        from rich.console import Console
        from rich.live import Live
        from rich.spinner import Spinner
        from rich.text import Text

        self._text = Text
        self._spinner = Spinner("dots")
        self.console = Console(file=out, highlight=False)
        self.live = Live(self, console=self.console, refresh_per_second=8, transient=True)
        self.live.start()

    def __rich__(self) -> Any:
        # Called by rich's refresh thread: the status reflects the latest heartbeat and activity.
        if not self.current:
            return self._text("")
        self._spinner.text = self._text(self.status(), style="dim")
        return self._spinner

    def say(self, text: str) -> None:
        with self.lock:
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)
            self.last_output = time.monotonic()

    def tick(self) -> None:
        pass  # the status line is always there

    def close(self) -> None:
        self.live.stop()


def make_view(out: TextIO, *, json_mode: bool, status_every: float = 15.0) -> PlainView:
    """Live status line on a terminal, plain lines otherwise, JSON lines with --json."""
    if json_mode:
        return JsonView(out)
    if out.isatty() and os.environ.get("TERM") != "dumb":
        return LiveView(out)
    return PlainView(out, still_every=status_every)


def run_and_report(script: list[tuple[bytes, dict[str, Any]]], agent_argv: Callable[[str], list[str]],
                   workspace: str, *, json_mode: bool, out: TextIO | None = None,
                   status_every: float = 15.0) -> int:
    """Run the script with a live view; print which commands did not succeed; 0 only if all did."""
    out = out or sys.stdout
    view = make_view(out, json_mode=json_mode, status_every=status_every)
    try:
        results = run_script(script, agent_argv, view)
    finally:
        view.close()
    lines = summary_lines(results, workspace)
    target = sys.stderr if json_mode else out
    target.write("\n" + "\n".join(lines) + "\n")
    target.flush()
    return 0 if all(r.ok for r in results) else 1
