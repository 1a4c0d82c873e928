"""NDJSON transport: a bounded line reader and the single stdout writer.

Only `Writer` writes to the protocol stream. Every message is one orjson line, flushed, and never
longer than lorch's reader limit (262,143 bytes before the newline): an oversize payload is
spilled to a file in the workspace and the event carries a summary plus path, sha256 and size.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

import orjson

from agent.protocol import build_log

__all__ = ["LineReader", "Oversize", "Writer", "MAX_STDOUT_LINE", "DEFAULT_MAX_INPUT_LINE", "truncate_marked"]

MAX_STDOUT_LINE = 262_143
DEFAULT_MAX_INPUT_LINE = 256 * 1024
_CHUNK = 64 * 1024


class Oversize:
    """Marker for an input line longer than the cap (discarded up to its newline)."""

    def __init__(self, size: int) -> None:
        self.size = size


class LineReader:
    """Reads `\\n`-terminated lines with an explicit byte cap; never buffers more than the cap."""

    def __init__(self, stream: BinaryIO, max_bytes: int = DEFAULT_MAX_INPUT_LINE) -> None:
        self.stream = stream
        self.max_bytes = max_bytes

    def read(self) -> bytes | Oversize | None:
        """The next line without its newline, an Oversize marker, or None at EOF."""
        line = self.stream.readline(self.max_bytes + 1)
        if not line:
            return None
        if line.endswith(b"\n"):
            return line[:-1]
        if len(line) <= self.max_bytes:
            return line  # last line without a trailing newline
        # Too long: drain up to the newline in bounded chunks so memory stays flat.
        total = len(line)
        while True:
            chunk = self.stream.readline(_CHUNK)
            if not chunk:
                break
            total += len(chunk)
            if chunk.endswith(b"\n"):
                total -= 1
                break
        return Oversize(total)


Spiller = Callable[[dict[str, Any], bytes], dict[str, Any]]

# When the envelope alone (ids, event name…) is this large, its long strings are cut first.
_ENVELOPE_SHARE = 4
_ID_KEEP_BYTES = 1024
# Payload keys that survive every shrink (bounded), so lorch still sees what happened.
_ESSENTIAL_KEYS = ("code", "message", "retriable", "status", "summary", "spilled", "tests")
_ESSENTIAL_TEXT = 2000


def truncate_marked(text: str, keep_bytes: int) -> str:
    """The first `keep_bytes` UTF-8 bytes of `text` plus `…[truncated sha256:<12 hex> <n> bytes]`."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= keep_bytes:
        return text
    digest = hashlib.sha256(raw).hexdigest()[:12]
    return raw[:keep_bytes].decode("utf-8", "ignore") + f"…[truncated sha256:{digest} {len(raw)} bytes]"


def cut_strings(obj: Any, keep_bytes: int, depth: int = 0) -> Any:
    """A copy of small, agent-built data with every string longer than `keep_bytes` marked and cut."""
    if isinstance(obj, str):
        return obj if len(obj) * 4 <= keep_bytes else truncate_marked(obj, keep_bytes)
    if depth > 8:
        return "…" if isinstance(obj, dict | list | tuple) else obj
    if isinstance(obj, dict):
        return {truncate_marked(str(k), keep_bytes): cut_strings(v, keep_bytes, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [cut_strings(v, keep_bytes, depth + 1) for v in obj]
    return obj


def _plain(obj: Any, depth: int = 0) -> Any:
    """JSON-safe data for what orjson refused: str keys, valid UTF-8, 64-bit ints, bounded depth."""
    if isinstance(obj, str):
        return obj.encode("utf-8", "replace").decode("utf-8")
    if isinstance(obj, bool) or obj is None or isinstance(obj, float):
        return obj
    if isinstance(obj, int):
        return obj if -(2**63) <= obj < 2**64 else str(obj)
    if depth > 32:
        return "…"
    if isinstance(obj, dict):
        return {_plain(str(k)): _plain(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v, depth + 1) for v in obj]
    return _plain(str(obj))


def _essentials(payload: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in _ESSENTIAL_KEYS:
        value = payload.get(key)
        if isinstance(value, str):
            out[key] = truncate_marked(value, _ESSENTIAL_TEXT)
        elif isinstance(value, bool | int | float):
            out[key] = value
        elif key == "tests" and isinstance(value, dict):
            out[key] = {k: truncate_marked(v, _ESSENTIAL_TEXT) if isinstance(v, str) else v
                        for k, v in value.items() if k in ("status", "summary")}
        elif key == "spilled" and isinstance(value, dict):
            out[key] = cut_strings(value, _ESSENTIAL_TEXT)
    return out


class Writer:
    """Thread-safe single writer of protocol lines, with a bounded budget of stdout `log` lines.

    `write` never raises and never emits a line over `max_line`: an oversize message is shrunk in
    steps — cut over-long envelope strings (ids) with a marker, spill the payload to a file, keep
    only the payload's essentials (`code`, `message`, `summary`, … bounded), cut every string —
    and `code` and `message` survive every step.
    """

    def __init__(self, stream: BinaryIO, *, redact: Callable[[Any], Any] | None = None,
                 spill: Spiller | None = None, max_line: int = MAX_STDOUT_LINE, max_logs: int = 20) -> None:
        self.stream = stream
        self.redact = redact or (lambda x: x)
        self.spill = spill
        self.max_line = max_line
        self.max_logs = max_logs
        self.logs_written = 0
        self.logs_suppressed = 0
        self.closed = False
        self._lock = threading.Lock()

    def write(self, message: dict[str, Any]) -> bool:
        """Write one message as one line; returns False if the stream is gone."""
        line = self.encode(message)
        with self._lock:
            if self.closed:
                return False
            try:
                self.stream.write(line + b"\n")
                self.stream.flush()
                return True
            except (BrokenPipeError, OSError, ValueError):
                self.closed = True
                return False

    def log(self, level: str, message: str, fields: dict[str, Any] | None = None) -> bool:
        """A `log` line on stdout, only while the per-process budget lasts (lorch stops at 50)."""
        with self._lock:
            if self.logs_written >= self.max_logs:
                self.logs_suppressed += 1
                return False
            self.logs_written += 1
        return self.write(build_log(level, message[:500], fields))

    def encode(self, message: dict[str, Any]) -> bytes:
        """The redacted line (without newline) for `message`, within `max_line` bytes."""
        line = self._dumps(message)
        return line if len(line) <= self.max_line else self._shrink(message, line)

    def _dumps(self, message: dict[str, Any]) -> bytes:
        try:
            return orjson.dumps(self.redact(message))
        except (TypeError, ValueError, RecursionError):  # orjson.JSONEncodeError is a TypeError
            return orjson.dumps(self.redact(_plain(message)))

    def _shrink(self, message: dict[str, Any], line: bytes) -> bytes:
        msg = dict(message)
        # 1. Ids (or other envelope strings) that alone take a large share of the line.
        envelope = {k: v for k, v in msg.items() if k not in ("payload", "artifacts", "fields")}
        if len(self._dumps(envelope)) > self.max_line // _ENVELOPE_SHARE:
            msg.update(cut_strings(envelope, _ID_KEEP_BYTES))
            out = self._dumps(msg)
            if len(out) <= self.max_line:
                return out
        # 2. The payload goes to a file; the event keeps a summary and where it went.
        if self.spill is not None and isinstance(msg.get("payload"), dict):
            try:
                msg["payload"] = self.spill(msg, line)
            except Exception:  # a failed spill still leaves the steps below
                pass
            out = self._dumps(msg)
            if len(out) <= self.max_line:
                return out
        # 3. Only the essentials: the payload's code, message, summary…; no artifacts or fields.
        minimal = {k: v for k, v in msg.items() if k not in ("payload", "artifacts", "fields")}
        if isinstance(msg.get("payload"), dict):
            minimal["payload"] = _essentials(msg["payload"])
            minimal["payload"].setdefault("summary", f"payload of {len(line)} bytes dropped: too large for one line")
        elif "payload" in msg:
            minimal["payload"] = {"summary": f"payload of {len(line)} bytes dropped: too large for one line"}
        if msg.get("kind") == "log":
            minimal["message"] = truncate_marked(str(msg.get("message", "")), 1000)
            minimal["fields"] = {}
        out = self._dumps(minimal)
        # 4. Every string cut, shorter each round (only a tiny `max_line` gets here).
        keep = _ID_KEEP_BYTES
        while len(out) > self.max_line and keep >= 8:
            out = self._dumps(cut_strings(minimal, keep))
            keep //= 4
        if len(out) > self.max_line:
            out = orjson.dumps({"kind": str(msg.get("kind", "log"))[:16], "summary": "message dropped: too large"})
        return out
