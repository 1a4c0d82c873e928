"""State on disk: `state/current_task.json` and the per-task harness files of seed 002.

Every write is temp file + fsync + rename (+ fsync of the directory), so a crash or `kill -9` at
any instant leaves either the old or the new file, never half of one. `state.json` is shared with
an external supervisor that may write `"status": "stopped"` into it; the agent's own writes go
through a lock and never overwrite a stop it has not yet seen.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from agent.approval_archive import archive
from agent.atomic_json import write_json_atomic
from agent.clock import utc_now
from agent.errors import TaskStateCorrupted
from agent.supervised.home import AgentHome

__all__ = ["write_json_atomic", "read_json", "load_current", "save_current", "clear_current", "describe_current",
           "TaskFiles", "TERMINAL", "STATE_VERSION", "request_stop"]

STATE_VERSION = 1
TERMINAL = ("complete", "failed", "stopped")
STOPPED_STATE = "stopped"
_REQUIRED = ("version", "id", "prompt", "status", "step_count", "max_steps")


def read_json(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


def _fix(home: AgentHome) -> str:
    return f"luallm-agent run --reset --home {shlex.quote(str(home.root))}"


def load_current(home: AgentHome) -> dict[str, Any] | None:
    """The saved task, None when there is none; TaskStateCorrupted (with the fix) when unreadable."""
    path = home.current_task
    if not path.exists():
        return None
    try:
        data = read_json(path)
    except (OSError, orjson.JSONDecodeError) as exc:
        why = f"not valid JSON ({exc})" if isinstance(exc, orjson.JSONDecodeError) else str(exc)
        raise TaskStateCorrupted(f"{path} is corrupted: {why}. Nothing was run. Inspect it, then clear it with: "
                                 f"{_fix(home)}", path=str(path), fix=_fix(home)) from None
    problem = None
    if not isinstance(data, dict):
        problem = "not a JSON object"
    elif missing := [k for k in _REQUIRED if k not in data]:
        problem = f"missing {', '.join(missing)}"
    elif data.get("version") != STATE_VERSION:
        problem = f"state version {data.get('version')!r}, this agent reads {STATE_VERSION}"
    elif data.get("graph") is not None and not isinstance((data.get("graph") or {}).get("nodes"), list):
        problem = "graph.nodes is not a list"
    if problem:
        raise TaskStateCorrupted(f"{path} is corrupted: {problem}. Nothing was run. Inspect it, then clear it "
                                 f"with: {_fix(home)}", path=str(path), fix=_fix(home))
    assert isinstance(data, dict)
    return data


def save_current(home: AgentHome, task: dict[str, Any]) -> None:
    task["updated_at"] = utc_now()
    write_json_atomic(home.current_task, task)


def clear_current(home: AgentHome) -> list[str]:
    """Remove current_task.json and clear every pending approval; returns what was removed.

    A cleared request is kept under `state/approvals/` marked cleared, like any answered one."""
    removed: list[str] = []
    with contextlib.suppress(FileNotFoundError):
        home.current_task.unlink()
        removed.append(str(home.current_task))
    for p in sorted(home.approvals_dir.glob("*.json")):
        try:
            request = read_json(p)
        except (OSError, orjson.JSONDecodeError):
            request = None
        if isinstance(request, dict):
            archive(p, {**request, "decision": "cleared", "decided_by": "luallm-agent run --reset",
                        "decided_at": utc_now()})
        else:
            p.unlink(missing_ok=True)
        removed.append(str(p))
    return removed


def describe_current(home: AgentHome) -> tuple[str, str]:
    """(level, text) about the saved task, for doctor."""
    try:
        task = load_current(home)
    except TaskStateCorrupted as exc:
        return "fatal", exc.message
    if task is None:
        return "ok", "no task in progress"
    if task["status"] in TERMINAL:
        return "ok", f"last task {task['id']} ended {task['status']}"
    how = "paused (" + str(task.get("pause_reason")) + ")" if task.get("paused") else "interrupted"
    return "warn", f"task {task['id']} is {how} in {task['status']}; continue with `luallm-agent run --resume`"


class TaskFiles:
    """`tasks/<task_id>/`: task.json (immutable), state.json, heartbeat.json, actions.jsonl, artifacts/."""

    def __init__(self, home: AgentHome, task_id: str) -> None:
        self.dir = home.task_dir(task_id)
        self.task_json = self.dir / "task.json"
        self.state_json = self.dir / "state.json"
        self.heartbeat_json = self.dir / "heartbeat.json"
        self.actions = self.dir / "actions.jsonl"
        self.artifacts = self.dir / "artifacts"
        self.lock_path = self.dir / ".lock"

    def create(self, definition: dict[str, Any]) -> None:
        """Write task.json once (O_EXCL: it is immutable) and the first state.json."""
        self.artifacts.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = orjson.dumps(definition, option=orjson.OPT_INDENT_2) + b"\n"
        try:
            fd = os.open(self.task_json, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        except FileExistsError:
            return
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def read_state(self) -> dict[str, Any]:
        try:
            data = read_json(self.state_json)
        except (OSError, orjson.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def stop_requested(self) -> bool:
        return self.read_state().get("status") == "stopped"

    def write_state(self, status: str, iteration: int, started_at: str, *, machine_state: str,
                    termination_reason: str | None = None, models_tried: list[dict[str, str]] | None = None) -> str:
        """Write state.json unless a supervisor stopped the task first; returns the status on disk."""
        with self.locked():
            current = self.read_state()
            if current.get("status") == "stopped" and status != "stopped":
                return "stopped"
            state: dict[str, Any] = {
                "status": status, "iteration": iteration, "started_at": started_at, "updated_at": utc_now(),
                "termination_reason": termination_reason if termination_reason is not None
                else current.get("termination_reason") if status == "stopped" else None,
                "machine_state": machine_state, "pid": os.getpid()}
            if models_tried:
                state["models_tried"] = models_tried
            write_json_atomic(self.state_json, state)
            return status

    def end_if_open(self, reason: str) -> bool:
        """Mark state.json stopped with `reason` unless it already ended; True when it changed."""
        if not self.state_json.exists():
            return False
        with self.locked():
            state = self.read_state()
            if state.get("status") in TERMINAL:
                return False
            state.update(status="stopped", updated_at=utc_now(), termination_reason=reason,
                         machine_state=STOPPED_STATE)
            write_json_atomic(self.state_json, state)
        return True

    def heartbeat(self, iteration: int, status: str) -> None:
        write_json_atomic(self.heartbeat_json, {"iteration": iteration, "timestamp": utc_now(), "status": status,
                                                "pid": os.getpid()})

    def append_action(self, entry: dict[str, Any]) -> None:
        line = orjson.dumps({"timestamp": utc_now(), **entry}, default=str) + b"\n"
        fd = os.open(self.actions, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def request_stop(home: AgentHome, task_id: str, reason: str = "stopped by `luallm-agent stop`") -> bool:
    """What `luallm-agent stop TASK_ID` does: mark state.json stopped (under the task lock)."""
    files = TaskFiles(home, task_id)
    if not files.task_json.exists():
        return False
    with files.locked():
        state = files.read_state()
        state.update(status="stopped", updated_at=utc_now(), termination_reason="external_stop",
                     stop_reason=reason)
        write_json_atomic(files.state_json, state)
    return True
