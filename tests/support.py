"""Shared test helpers: commands, agent subprocesses, and schema checks of every stdout line.

Fixtures are re-exported by conftest.py; tests import helpers with `from support import ...`.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
import warnings
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

from agent.conductor import AgentProcess, is_terminal

ROOT = Path(__file__).resolve().parent.parent
# The shared reference (lorch's schemas and fixtures) lives beside the repository; tests that use
# it say so visibly when it is absent (a warning per check, or a skip with the reason).
SHARED = Path(os.environ.get("LUALLM_AGENT_TEST_SHARED") or ROOT.parent / "shared")
RELAXED = SHARED / "reference" / "lorch-schemas-relaxed"
FAR_DEADLINE = "2099-01-01T00:00:00Z"


def _validator(path: Path) -> Any:
    schema = json.loads(path.read_text())
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


OURS = {kind: _validator(ROOT / "schemas" / f"{kind}.schema.json") for kind in ("event", "heartbeat", "log")}
LORCH = ({kind: _validator(RELAXED / f"{kind}.v1.relaxed.json") for kind in ("event", "heartbeat", "log")}
         if RELAXED.is_dir() else {})


class LorchSchemasMissing(UserWarning):
    """lorch's own schemas are not beside the repository: only ours were checked."""


def assert_wire_valid(msg: dict[str, Any]) -> None:
    """Every stdout message must satisfy our schemas and lorch's (relaxed ids)."""
    kind = msg.get("kind")
    assert kind in OURS, f"unexpected kind on stdout: {msg}"
    OURS[kind].validate(msg)
    if LORCH:
        LORCH[kind].validate(msg)
    else:
        warnings.warn(LorchSchemasMissing(f"lorch's schemas not found at {RELAXED}: this message was checked "
                                          "against our schemas only"), stacklevel=2)


def make_command(action: str, *, task_id: str = "T-0001", inputs: dict[str, Any] | None = None,
                 role: str | None = None, snapshot: str = "snap-0123456789ab",
                 expected_outputs: list[dict[str, Any]] | None = None, key: str | None = None,
                 deadline: str = FAR_DEADLINE) -> dict[str, Any]:
    roles = {"implement": "builder", "implement_changes": "builder", "review": "reviewer",
             "update_spec": "spec_maintainer", "intake": "orchestration", "task_discovery": "orchestration"}
    return {
        "kind": "command", "message_id": str(uuid.uuid4()), "correlation_id": f"corr-{task_id}-{action}",
        "task_id": task_id, "idempotency_key": key or f"ik:{uuid.uuid5(uuid.NAMESPACE_URL, task_id + action).hex * 2}",
        "to": {"agent_type": role or roles[action]}, "action": action,
        "inputs": inputs if inputs is not None else {"goal": "do the thing"},
        "expected_outputs": expected_outputs or [], "version": {"snapshot_id": snapshot},
        "deadline": deadline, "retry": {"attempt": 0, "max_attempts": 3}, "priority": 5,
    }


class Agent(AgentProcess):
    """An agent subprocess whose every stdout line is schema-checked."""

    def until(self, pred: Any, timeout: float = 30) -> list[dict[str, Any]]:  # type: ignore[override]
        got = super().until(pred, timeout)
        for m in got:
            assert m.get("kind") != "garbage", f"non-JSON on stdout: {m}"
            assert_wire_valid(m)
        return got

    def ready(self) -> list[dict[str, Any]]:
        return self.until(lambda m: m.get("kind") == "heartbeat" and m.get("status") == "ready")

    def run(self, cmd: dict[str, Any], timeout: float = 60) -> list[dict[str, Any]]:
        self.send(cmd)
        return self.until(lambda m: is_terminal(self.role, m, cmd["task_id"]), timeout)


def fenced(*files: tuple[str, str], words: str = "") -> str:
    """A builder reply in the fenced text form: its words (the summary), then each file's path on a
    line of its own and its whole content in a fenced block."""
    parts = [words] if words else []
    parts += [f"{path}\n```\n{content.rstrip(chr(10))}\n```" for path, content in files]
    return "\n\n".join(parts) + "\n"


def lua_files(*files: tuple[str, str]) -> str:
    """A builder reply in the Lua long-string form (`--answers lua`): `tools.write(path, [==[…]==])`."""
    return "".join(f'tools.write("{path}", [==[\n{content}]==])\n' for path, content in files)


def write_replies(path: Path, replies: list[Any], json_schema: bool = True) -> Path:
    texts = [r if isinstance(r, str) else json.dumps(r) for r in replies]
    path.write_text(json.dumps(texts if json_schema else {"replies": texts, "json_schema": False}))
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def spawn(tmp_path: Path):  # type: ignore[no-untyped-def]
    """spawn(role, *extra_args, replies=[...], env={...}) → a started Agent (waits for ready).
    `json_schema=False`: the scripted server takes no response_format (the prompt shows the schema
    and the worked example)."""
    started: list[Agent] = []

    def _spawn(role: str, *extra: str, workspace: Path | None = None, replies: list[Any] | None = None,
               env: dict[str, str] | None = None, wait_ready: bool = True, json_schema: bool = True) -> Agent:
        ws = workspace or (tmp_path / "ws")
        ws.mkdir(exist_ok=True)
        argv = [sys.executable, "-m", "agent", "stdio", "--role", role, "--workspace", str(ws),
                "--heartbeat-interval", "0.5", *extra]
        if replies is not None:
            argv += ["--scripted-replies", str(write_replies(tmp_path / f"replies-{len(started)}.json", replies,
                                                                   json_schema))]
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LUALLM_AGENT_"))}
        full_env.pop("AGENT_TYPE", None)
        full_env.update(env or {})
        agent = Agent(role, argv, env=full_env, stderr=open(tmp_path / f"stderr-{len(started)}.txt", "wb"))
        started.append(agent)
        if wait_ready:
            agent.ready()
        return agent

    yield _spawn
    for a in started:
        if a.proc.poll() is None:
            a.proc.kill()
            a.proc.wait()


def events(msgs: list[dict[str, Any]], name: str | None = None) -> list[dict[str, Any]]:
    return [m for m in msgs if m.get("kind") == "event" and (name is None or m.get("event") == name)]


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)
