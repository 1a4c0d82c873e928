"""The run record of a plan (source, tool calls, outcome, limits and usage) and its DOT graph."""

from __future__ import annotations

import secrets
import time
from typing import Any

import orjson

from agent.errors import AgentError, bound_text
from agent.pathpolicy import AGENT
from agent.redact import Redactor, secrets_under_keys
from agent.workspace import AGENT_DIR, Workspace

__all__ = ["new_run_id", "record_path", "write_record", "record_to_dot", "PLANS_DIR"]

PLANS_DIR = f"{AGENT_DIR}/plans"
_WRITES = {"write", "create", "edit"}
_READS = {"read", "edit"}


def new_run_id() -> str:
    """`plan-<UTC yyyymmddThhmmss>-<8 hex>`: sortable and unique, safe as a file name."""
    return "plan-" + time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(4)


def record_path(run_id: str) -> str:
    return f"{PLANS_DIR}/{run_id}.json"


def write_record(workspace: Workspace, record: dict[str, Any], redactor: Redactor) -> str:
    """Write the redacted record atomically under the workspace log folder; returns its path.

    Secrets under `*_token/_key/_secret` keys of the plan's context (its inputs) are masked
    wherever they appear in the record — tool arguments, output, result, error — even when the
    caller's redactor never saw that context (`luallm-agent plan --input`).
    """
    rel = record_path(record["run_id"])
    for call in record.get("tool_calls") or []:
        if isinstance(call, dict) and isinstance(call.get("error"), str):
            call["error"] = bound_text(call["error"])  # tool errors may echo huge arguments
    scrub = redactor
    if secrets_under_keys(record.get("context")):
        scrub = redactor.copy()
        try:
            scrub.harvest(record.get("context"))
        except AgentError:  # too many to scrub as text: keep the record out of reach entirely
            record = {k: record.get(k) for k in ("run_id", "kind", "started_at", "finished_at", "ok")}
            record["redacted"] = "the plan's inputs carry more secret values than can be scrubbed"
    data = orjson.dumps(scrub.data(record), option=orjson.OPT_INDENT_2, default=str)
    workspace.write_atomic(rel, data, policy=AGENT)
    return rel


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _short(value: Any, cap: int = 40) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    return text if len(text) <= cap else text[:cap - 1] + "…"


def _path_of(call: dict[str, Any]) -> str | None:
    args = call.get("args")
    if isinstance(args, dict) and isinstance(args.get("path"), str):
        path = str(args["path"])
        return path[2:] if path.startswith("./") else path
    return None


def record_to_dot(record: dict[str, Any]) -> str:
    """A Graphviz DOT graph: start → each tool call in order → outcome; dashed edges from a
    write of a path to each later read or edit of it (the data flow through files)."""
    run_id = str(record.get("run_id", "plan"))
    calls = record.get("tool_calls") or []
    lines = [f'digraph "{_esc(run_id)}" {{', "  rankdir=TB;", '  node [shape=box, fontname="monospace", fontsize=10];',
             f'  start [shape=oval, label="{_esc(run_id)}\\n{_esc(str(record.get("kind", "lua")))}"];']
    prev = "start"
    last_write: dict[str, str] = {}
    for i, call in enumerate(calls, 1):
        node = f"c{i}"
        tool = str(call.get("tool", "?"))
        args = call.get("args")
        if isinstance(args, dict):
            summary = ", ".join(f"{k}={_short(v, 24)}" for k, v in list(args.items())[:3])
        else:
            summary = _short(args)
        status = "ok" if call.get("ok") else f"error: {_short(call.get('error', ''), 40)}"
        label = f"{i}. {tool}({summary})\n{status} · {call.get('result_bytes', 0)} B · {call.get('ms', 0)} ms"
        color = "darkgreen" if call.get("ok") else "red"
        lines.append(f'  {node} [label="{_esc(label)}", color={color}];')
        lines.append(f"  {prev} -> {node};")
        path = _path_of(call)
        if path and tool in _READS and path in last_write:
            lines.append(f'  {last_write[path]} -> {node} [style=dashed, label="{_esc(_short(path, 30))}"];')
        if path and tool in _WRITES and call.get("ok"):
            last_write[path] = node
        prev = node
    error = record.get("error")
    if error:
        end_label = f"{error.get('code')}: {_short(error.get('message', ''), 60)}"
        if error.get("line"):
            end_label += f" (line {error['line']})"
        lines.append(f'  end [shape=oval, color=red, label="{_esc(end_label)}"];')
    else:
        lines.append(f'  end [shape=oval, color=darkgreen, label="ok: {_esc(_short(record.get("result"), 60))}"];')
    lines.append(f"  {prev} -> end;")
    lines.append("}")
    return "\n".join(lines) + "\n"
