import io
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import assert_wire_valid

from agent.protocol import build_event
from agent.transport import MAX_STDOUT_LINE, LineReader, Oversize, Writer, truncate_marked


def test_reader_returns_lines_and_eof() -> None:
    r = LineReader(io.BytesIO(b'{"a":1}\n{"b":2}\n'), max_bytes=100)
    assert r.read() == b'{"a":1}'
    assert r.read() == b'{"b":2}'
    assert r.read() is None


def test_reader_discards_oversize_line_up_to_newline_and_keeps_going() -> None:
    data = b"x" * 1000 + b"\n" + b"ok\n"
    r = LineReader(io.BytesIO(data), max_bytes=100)
    first = r.read()
    assert isinstance(first, Oversize) and first.size == 1000
    assert r.read() == b"ok"


def test_writer_emits_one_flushed_line_per_message() -> None:
    out = io.BytesIO()
    w = Writer(out)
    w.write({"kind": "log", "message": "hi"})
    w.write({"kind": "log", "message": "there"})
    lines = out.getvalue().split(b"\n")
    assert [orjson.loads(x)["message"] for x in lines if x] == ["hi", "there"]


def test_writer_spills_oversize_payload() -> None:
    out = io.BytesIO()
    spilled = []

    def spill(msg, line):  # type: ignore[no-untyped-def]
        spilled.append(len(line))
        return {"summary": "spilled", "spilled": {"path": "x.json"}}

    w = Writer(out, spill=spill, max_line=1000)
    w.write({"kind": "event", "payload": {"big": "y" * 5000}})
    line = out.getvalue().rstrip(b"\n")
    assert len(line) <= 1000 and orjson.loads(line)["payload"]["summary"] == "spilled"
    assert spilled and spilled[0] > 5000


def test_a_spilled_payload_is_the_redacted_one() -> None:
    from agent.redact import Redactor

    secret = "tok-SECRET-spill-7f3a9c"
    spilled: list[bytes] = []

    def spill(msg, line):  # type: ignore[no-untyped-def]
        spilled.append(line)
        return {"summary": "spilled", "spilled": {"path": "x.json"}}

    out = io.BytesIO()
    Writer(out, redact=Redactor({}, extra=[secret]).data, spill=spill, max_line=1000).write(
        {"kind": "event", "payload": {"notes": f"used {secret} " + "y" * 5000}})
    assert spilled and b"used [REDACTED] " in spilled[0] and secret.encode() not in spilled[0] + out.getvalue()


def test_writer_never_exceeds_line_cap_even_without_spill() -> None:
    out = io.BytesIO()
    Writer(out, max_line=500).write({"kind": "event", "payload": {"big": "y" * 5000}})
    assert len(out.getvalue().rstrip(b"\n")) <= 500


def test_log_budget_is_enforced() -> None:
    out = io.BytesIO()
    w = Writer(out, max_logs=3)
    for i in range(10):
        w.log("info", f"m{i}")
    assert len(out.getvalue().splitlines()) == 3
    assert w.logs_suppressed == 7


# -- the line cap holds whatever the message, and code/message survive every shrink -------------


def _error_event(task_id: str, correlation_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    return build_event(agent_type="builder", task_id=task_id, correlation_id=correlation_id, event="error",
                       status="failed", payload=payload, snapshot_id="snap-1")


def _spill_like_runtime(msg: dict[str, Any], line: bytes) -> dict[str, Any]:
    p = msg["payload"]
    keep = {k: p[k] for k in ("code", "retriable") if k in p}
    keep["message"] = truncate_marked(str(p.get("message", "")), 2000)
    keep["summary"] = f"[payload of {len(line)} bytes written to spill/x.json]"
    keep["spilled"] = {"path": "logs/luallm-agent/spill/x.json", "sha256": "sha256:" + "0" * 64, "size": len(line)}
    return keep


def test_error_echoing_huge_ids_stays_under_the_cap_and_keeps_code_and_message() -> None:
    out = io.BytesIO()
    payload = {"code": "model_not_configured", "message": "no model configured", "retriable": False}
    Writer(out, spill=_spill_like_runtime).write(_error_event("T" * 131_000, "c" * 131_000, payload))
    line = out.getvalue().rstrip(b"\n")
    msg = orjson.loads(line)
    assert len(line) <= MAX_STDOUT_LINE
    assert msg["payload"]["code"] == "model_not_configured" and msg["payload"]["message"] == "no model configured"
    assert msg["task_id"].startswith("T" * 1000) and "…[truncated sha256:" in msg["task_id"]
    assert msg["task_id"].endswith("131000 bytes]") and msg["correlation_id"] != msg["task_id"]
    assert_wire_valid(msg)


def test_truncation_marker_names_digest_and_size_and_keeps_utf8_whole() -> None:
    cut = truncate_marked("é" * 1000, 101)  # 2 bytes each: the cut never splits a character
    assert cut.startswith("é" * 50) and cut.endswith("2000 bytes]") and "sha256:" in cut
    assert truncate_marked("short", 100) == "short"


def test_writer_never_raises_on_data_orjson_refuses() -> None:
    out = io.BytesIO()
    w = Writer(out)
    assert w.write({"kind": "log", "message": "bad \ud800 surrogate", "fields": {1: 2 ** 70}})
    msg = orjson.loads(out.getvalue())
    assert msg["fields"] == {"1": str(2 ** 70)} and "surrogate" in msg["message"]


_text = st.one_of(st.integers(0, 300_000).map(lambda n: "x" * n),
                  st.integers(0, 100_000).map(lambda n: "é€😀" * n),
                  st.text(max_size=50))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(task_id=_text, correlation_id=_text, message=_text, summary=_text, extra=_text,
       spill=st.booleans(), artifacts=st.integers(0, 3000))
def test_every_line_fits_and_keeps_code_and_message(task_id: str, correlation_id: str, message: str, summary: str,
                                                    extra: str, spill: bool, artifacts: int) -> None:
    out = io.BytesIO()
    payload = {"code": "internal_error", "message": message, "retriable": True, "summary": summary,
               "tests": {"status": "fail", "summary": summary, "output_tail": extra}, "detail": extra}
    msg = _error_event(task_id or "t", correlation_id or "c", payload)
    msg["artifacts"] = [{"path": f"f{i}", "sha256": "sha256:" + "a" * 64, "size": i} for i in range(artifacts)]
    Writer(out, spill=_spill_like_runtime if spill else None).write(msg)
    line = out.getvalue().rstrip(b"\n")
    assert b"\n" not in line and len(line) <= MAX_STDOUT_LINE
    got = orjson.loads(line)
    assert_wire_valid(got)
    assert got["payload"]["code"] == "internal_error"
    kept = got["payload"]["message"]
    assert kept == message or ("…[truncated sha256:" in kept and message.startswith(kept.split("…[truncated")[0]))
