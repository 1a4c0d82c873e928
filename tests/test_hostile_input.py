"""Input that cannot kill: every stdin line gets a command or an error event, every stdout line fits.

Attacks from issue 7 run against the real agent subprocess; the serve loop must survive each one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from support import dumps, events, fenced, make_command

from agent.errors import MAX_MESSAGE_BYTES, AgentError
from agent.protocol import MAX_JSON_DEPTH, nesting_exceeds
from agent.transport import MAX_STDOUT_LINE


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def _still_serving(agent: Any) -> None:
    agent.send(b"still not json")
    assert agent.until(lambda m: m.get("event") == "error")[-1]["payload"]["code"] == "invalid_command"
    assert agent.proc.poll() is None


@pytest.mark.parametrize("text, deeper", [
    (b"[" * 65 + b"]" * 65, True),
    (b"[" * 64 + b"]" * 64, False),
    (b'{"a":' * 65 + b"1" + b"}" * 65, True),
    (b'["' + b"[" * 500 + b'"]', False),                      # brackets inside a string do not nest
    (b'["\\"' + b"[" * 500 + b'"]', False),                   # nor after an escaped quote
    (b'["\\\\", ' + b"[" * 70 + b"]" * 70 + b"]", True),      # an escaped backslash ends the escape
    (b"[" * 100_000, True),                                   # unterminated, still answered at once
])
def test_nesting_scan_counts_structure_not_strings(text: bytes, deeper: bool) -> None:
    assert nesting_exceeds(text, MAX_JSON_DEPTH) is deeper


def test_two_kilobyte_bracket_bomb_gets_an_error_and_the_agent_keeps_serving(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    agent.send(b'{"kind":' + b"[" * 1000 + b"]" * 1000 + b"}")
    err = agent.until(lambda m: m.get("event") == "error")[-1]["payload"]
    assert err["code"] == "invalid_command" and f"deeper than {MAX_JSON_DEPTH} levels" in err["message"]
    assert err["max_depth"] == MAX_JSON_DEPTH
    _still_serving(agent)
    agent.proc.stdin.close()
    assert agent.proc.wait(10) == 0


def test_valid_command_with_inputs_400_deep_is_invalid_command_with_its_ids(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    cmd = make_command("implement", task_id="T-deep", inputs={"deep": _nested(400)})
    agent.send(json.dumps(cmd).encode())  # orjson itself refuses to write this deep
    err = agent.until(lambda m: m.get("event") == "error")[-1]
    assert err["payload"]["code"] == "invalid_command" and "nested deeper" in err["payload"]["message"]
    assert (err["task_id"], err["correlation_id"]) == ("T-deep", cmd["correlation_id"])
    _still_serving(agent)


def test_nesting_within_the_limit_is_a_command(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    got = agent.run(make_command("implement", inputs={"deep": _nested(MAX_JSON_DEPTH - 3),
                                                      "code": "[" * 5000 + "{" * 5000}))
    assert events(got, "error")[-1]["payload"]["code"] == "model_not_configured"


def test_huge_ids_keep_every_line_under_the_cap_with_code_and_message(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    cmd = make_command("implement", task_id="T" * 131_000)
    cmd["correlation_id"] = "C" * 130_000
    line = dumps(cmd)
    assert len(line) < 262_144
    agent.send(line)
    got = agent.until(lambda m: m.get("event") == "builder.completed")
    for msg in got:
        assert len(orjson.dumps(msg)) <= MAX_STDOUT_LINE
    err = events(got, "error")[-1]
    assert err["payload"]["code"] == "model_not_configured" and err["payload"]["message"]
    assert err["task_id"].startswith("T" * 1000)
    done = events(got, "builder.completed")[-1]
    assert done["payload"]["tests"]["status"] == "fail"
    _still_serving(agent)


@pytest.mark.parametrize("line", [
    b'{"kind": "command", "x": NaN}', b"[1e999999]", b"1" + b"0" * 400, b'"\\ud800"', b'{"a": "\xff\xfe"}',
    b'{"a": "\x01"}', b'{"kind": "comm', b"\x00\x00\x00", b"\xef\xbb\xbf{}",
])
def test_hostile_scalars_are_invalid_command(spawn, line: bytes) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    agent.send(line)
    assert agent.until(lambda m: m.get("event") == "error")[-1]["payload"]["code"] == "invalid_command"
    _still_serving(agent)


def test_huge_kind_value_gives_a_bounded_message(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    agent.send(dumps({"kind": "k" * 200_000, "task_id": "T-k", "correlation_id": "c-k"}))
    err = agent.until(lambda m: m.get("event") == "error")[-1]
    assert err["task_id"] == "T-k" and len(err["payload"]["message"]) < 500


def test_every_error_message_is_bounded() -> None:
    err = AgentError("x" * 30_000_000)
    assert len(err.message.encode()) < MAX_MESSAGE_BYTES + 100 and "30000000 bytes" in err.message
    assert len(str(err)) == len(err.message)
    assert len(AgentError("m", path="p" * 100_000).payload()["path"]) < MAX_MESSAGE_BYTES + 100


def test_path_component_too_long_is_path_rejected_not_internal_error(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", replies=[fenced(("ok.txt", "x"), words="ok")])
    long_out = {"path": "d" * 300 + "/out.txt", "required": True}
    got = agent.run(make_command("implement", expected_outputs=[long_out]))
    err = events(got, "error")[-1]["payload"]
    assert err["code"] == "path_rejected", err
    assert events(got, "builder.completed")[-1]["status"] == "failed"


def test_commands_queued_at_eof_still_get_their_failure_events(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", "--test-command", "sleep 20", replies=[fenced(("ok.txt", "x"), words="ok")])
    agent.send(make_command("implement", task_id="T-running"))
    agent.until(lambda m: m.get("kind") == "heartbeat" and m.get("status") == "busy")
    for n in (1, 2):
        agent.send(make_command("implement", task_id=f"T-queued-{n}"))
    agent.proc.stdin.close()
    got = agent.until(lambda m: False, timeout=15)  # everything up to the exit
    for n in (1, 2):
        mine = [e for e in events(got) if e["task_id"] == f"T-queued-{n}"]
        assert [e["event"] for e in mine] == ["error", "builder.completed"], mine
        assert mine[0]["payload"]["code"] == "shutting_down" and mine[0]["payload"]["retriable"] is True
    assert agent.proc.wait(10) == 0
