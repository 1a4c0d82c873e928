"""Diagnostics: the audit JSONL file in the workspace (rotated by size) and stderr.

Everything here is redacted first. The bounded stdout `log` budget lives in `transport`.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

import orjson

from agent.clock import utc_now
from agent.errors import MAX_MESSAGE_BYTES, bound_text
from agent.redact import Redactor
from agent.workspace import make_private_dirs

__all__ = ["AuditLog"]


class AuditLog:
    """Append-only JSONL audit trail, 0600, rotated to `.1` … `.keep` when it passes `max_bytes`."""

    def __init__(self, path: Path | None, redactor: Redactor, *, max_bytes: int = 5 * 1024 * 1024,
                 keep: int = 3, stderr: bool = True) -> None:
        self.path = path
        self.redactor = redactor
        self.max_bytes = max_bytes
        self.keep = keep
        self.stderr = stderr
        self._lock = threading.Lock()
        if path is not None:
            make_private_dirs(path.parent)

    def record(self, event: str, **fields: Any) -> None:
        """Write one audit line (and a compact line to stderr)."""
        try:
            entry = self.redactor.data({"ts": utc_now(), "event": event, **fields})
            line = orjson.dumps(entry, default=str) + b"\n"
        except (TypeError, ValueError, RecursionError) as exc:  # an odd field must not lose the event
            entry = self.redactor.data({"ts": utc_now(), "event": event, "unencodable_fields": sorted(fields),
                                        "encode_error": type(exc).__name__})
            line = orjson.dumps(entry, default=str) + b"\n"
        with self._lock:
            if self.stderr:
                try:
                    short = line if len(line) < 2000 else line[:2000] + b"...\n"
                    sys.stderr.buffer.write(b"[luallm-agent] " + short)
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass
            if self.path is None:
                return
            try:
                self._rotate_if_needed(len(line))
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
            except OSError:
                pass

    def exception(self, event: str, exc: BaseException, **fields: Any) -> None:
        # Bounded: an exception may carry a 30 MB message (a Lua error, a huge path).
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.record(event, error=bound_text(repr(exc)), traceback=bound_text(tb, 4 * MAX_MESSAGE_BYTES), **fields)

    def _rotate_if_needed(self, incoming: int) -> None:
        assert self.path is not None
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size + incoming <= self.max_bytes:
            return
        for i in range(self.keep - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{i}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{i + 1}"))
        os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
