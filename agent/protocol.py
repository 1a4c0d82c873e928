"""Wire messages: command decoding/validation and builders for events, heartbeats and logs.

Validation uses the JSON Schemas in `schemas/` (the wire contract). jsonschema is imported lazily
so the `ready` heartbeat is not delayed by it.
"""

from __future__ import annotations

import functools
import json
import reprlib
import uuid
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import orjson

from agent.clock import utc_now
from agent.errors import InvalidCommand

__all__ = [
    "ROLES", "ROLE_ACTIONS", "TERMINAL_EVENTS", "Command", "ExpectedOutput",
    "decode_command", "recover_ids", "parse_line", "nesting_exceeds", "MAX_JSON_DEPTH", "build_event",
    "build_heartbeat", "build_log", "validator",
]

ROLES = ("builder", "reviewer", "spec_maintainer", "orchestration")
ROLE_ACTIONS: dict[str, tuple[str, ...]] = {
    "builder": ("implement", "implement_changes"),
    "reviewer": ("review",),
    "spec_maintainer": ("update_spec",),
    "orchestration": ("intake", "task_discovery"),
}
# Events that end a command for lorch, per role.
TERMINAL_EVENTS: dict[str, tuple[str, ...]] = {
    "builder": ("builder.completed",),
    "reviewer": ("review.completed",),
    "spec_maintainer": ("spec.updated", "spec.no_changes_needed", "spec.changes_requested"),
    "orchestration": ("orchestration.proposed_tasks", "orchestration.needs_clarification",
                      "orchestration.plan_conflict"),
}


# Commands are shallow (inputs a few levels deep). Deeper input is refused before any code that
# recurses sees it: Python's repr/jsonschema/redaction recurse, and orjson.dumps stops at 255.
MAX_JSON_DEPTH = 64
# Keep only brackets, folded to one pair (`{`→`[`, `}`→`]`), then +1/-1 per bracket.
_FOLD = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
_STEP[ord("[")], _STEP[ord("]")] = 1, -1
_short = reprlib.Repr()
_short.maxstring, _short.maxother, _short.maxlevel = 80, 80, 2


def nesting_exceeds(line: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON text nests arrays/objects deeper than `limit` (brackets inside strings ignored).

    Never recursive and no per-byte Python loop: escape pairs (`\\\\`, then `\\"`) are dropped, so
    splitting on the remaining quotes alternates outside/inside strings; the brackets outside are
    summed as +1/-1 and the running maximum compared with `limit` — all in C-speed builtins.
    A line with at most `limit` opening brackets anywhere is answered without that work.
    """
    if line.count(b"[") + line.count(b"{") <= limit:
        return False
    unescaped = line.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unescaped.split(b'"')[0::2])
    brackets = outside.translate(_FOLD, _NOT_BRACKETS)
    if brackets.count(b"[") <= limit:
        return False
    return max(accumulate(map(_STEP.__getitem__, brackets))) > limit


def parse_line(line: bytes) -> Any:
    """The JSON value of one input line; `InvalidCommand` if not JSON or nested too deep."""
    if nesting_exceeds(line):
        raise InvalidCommand(f"JSON nested deeper than {MAX_JSON_DEPTH} levels; refused before parsing",
                             max_depth=MAX_JSON_DEPTH)
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise InvalidCommand(f"not valid JSON: {exc}") from None


def short_repr(value: Any) -> str:
    """A bounded, non-recursive-blowup repr for error messages."""
    return _short.repr(value)


@functools.cache
def validator(name: str) -> Any:
    """A cached Draft 7 validator (with real date-time checking) for `schemas/<name>`."""
    import jsonschema

    from agent.resources import schema_dir

    schema = json.loads((schema_dir() / name).read_text())
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def schema_errors(name: str, instance: Any, limit: int = 3) -> list[str]:
    """Precise messages (`at $.path: message`) for why `instance` fails `schemas/<name>`."""
    errs = sorted(validator(name).iter_errors(instance), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    out = []
    for e in errs[:limit]:
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
        msg = e.message if len(e.message) < 300 else e.message[:300] + "…"
        out.append(f"at {where}: {msg}")
    return out


@dataclass(frozen=True)
class ExpectedOutput:
    path: str
    required: bool = True
    description: str | None = None


@dataclass
class Command:
    """A validated command from the orchestrator; ids are opaque strings echoed verbatim."""

    message_id: str
    correlation_id: str
    task_id: str
    idempotency_key: str
    agent_type: str
    action: str
    inputs: dict[str, Any]
    expected_outputs: list[ExpectedOutput]
    snapshot_id: str
    deadline: str
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Command:
        outs = [ExpectedOutput(o["path"], bool(o.get("required", True)), o.get("description"))
                for o in d.get("expected_outputs", [])]
        return cls(
            message_id=d["message_id"], correlation_id=d["correlation_id"], task_id=d["task_id"],
            idempotency_key=d["idempotency_key"], agent_type=d["to"]["agent_type"], action=d["action"],
            inputs=d["inputs"], expected_outputs=outs, snapshot_id=d["version"]["snapshot_id"],
            deadline=d["deadline"], raw=d,
        )


def recover_ids(obj: Any) -> dict[str, str]:
    """task_id / correlation_id from a (possibly invalid) message, when they are strings.

    Given raw bytes (a line refused before parsing), they are read with orjson, whose C parser
    stops at its own depth limit and never recurses in Python; only top-level keys are looked at.
    """
    if isinstance(obj, bytes):
        try:
            obj = orjson.loads(obj)
        except orjson.JSONDecodeError:
            return {}
    out: dict[str, str] = {}
    if isinstance(obj, dict):
        for key in ("task_id", "correlation_id"):
            if isinstance(obj.get(key), str):
                out[key] = obj[key]
    return out


def decode_command(obj: Any) -> Command:
    """Validate a decoded JSON value as a command, raising InvalidCommand with a precise message."""
    if not isinstance(obj, dict):
        raise InvalidCommand(f"a command must be a JSON object, got {type(obj).__name__}")
    if obj.get("kind") != "command":
        raise InvalidCommand(f"at $.kind: expected 'command', got {short_repr(obj.get('kind'))}")
    errors = schema_errors("command.schema.json", obj)
    if errors:
        raise InvalidCommand("invalid command: " + "; ".join(errors))
    return Command.from_dict(obj)


def new_message_id() -> str:
    return str(uuid.uuid4())


def build_event(*, agent_type: str, task_id: str, correlation_id: str, event: str,
                payload: dict[str, Any], status: str | None = None,
                artifacts: list[dict[str, Any]] | None = None, snapshot_id: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "kind": "event", "message_id": new_message_id(), "correlation_id": correlation_id,
        "task_id": task_id, "from": {"agent_type": agent_type}, "event": event,
    }
    if status is not None:
        msg["status"] = status
    msg["payload"] = payload
    if artifacts:
        msg["artifacts"] = artifacts
    if snapshot_id:
        msg["observed_version"] = {"snapshot_id": snapshot_id}
    msg["occurred_at"] = utc_now()
    return msg


def build_heartbeat(*, agent_type: str, agent_id: str, seq: int, status: str, pid: int, ppid: int,
                    uptime_s: float, last_activity_at: str, stats: dict[str, Any] | None,
                    task_id: str | None) -> dict[str, Any]:
    hb: dict[str, Any] = {
        "kind": "heartbeat", "agent": {"agent_type": agent_type, "agent_id": agent_id}, "seq": seq,
        "status": status, "pid": pid, "uptime_s": round(uptime_s, 3), "last_activity_at": last_activity_at,
    }
    if ppid >= 1:
        hb["ppid"] = ppid
    if stats:
        hb["stats"] = stats
    if task_id:
        hb["task_id"] = task_id
    return hb


def build_log(level: str, message: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"kind": "log", "level": level, "message": message, "fields": fields or {}, "timestamp": utc_now()}
