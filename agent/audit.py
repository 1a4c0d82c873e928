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
from agent.errors import MAX_MESSAGE_BYTES, AgentError, bound_text
from agent.redact import Redactor
from agent.workspace import Workspace
from agent.workspace_write import make_private_dirs

__all__ = ["AuditLog"]


class AuditLog:
    """Append-only JSONL audit trail, 0600, rotated to `.1` … `.keep` when it passes `max_bytes`."""

    def __init__(self, path: Path | None, redactor: Redactor, *, max_bytes: int = 5 * 1024 * 1024,
                 keep: int = 3, stderr: bool = True, anchor: Path | None = None) -> None:
        """`anchor`: the directory (the workspace root) from which the log is reached without
        following any link, so a planted `logs -> /elsewhere` symlink cannot redirect it."""
        self.path = path
        self.redactor = redactor
        self.max_bytes = max_bytes
        self.keep = keep
        self.stderr = stderr
        self._lock = threading.Lock()
        self._ws: Workspace | None = None
        if path is not None:
            base = anchor or path.parent
            make_private_dirs(base)
            self._ws = Workspace(base)
            self._rel = os.path.relpath(path, base)

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
            if self._ws is None:
                return
            try:
                self._rotate_if_needed(len(line))
                self._ws.append(self._rel, line)
            except (OSError, AgentError):
                pass

    def exception(self, event: str, exc: BaseException, **fields: Any) -> None:
        # Bounded: an exception may carry a 30 MB message (a Lua error, a huge path).
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.record(event, error=bound_text(repr(exc)), traceback=bound_text(tb, 4 * MAX_MESSAGE_BYTES), **fields)

    def _rotate_if_needed(self, incoming: int) -> None:
        assert self._ws is not None
        try:
            size = self._ws.lstat(self._rel).st_size
        except FileNotFoundError:
            return
        if size + incoming <= self.max_bytes:
            return
        for i in range(self.keep - 1, 0, -1):
            if self._ws.exists(f"{self._rel}.{i}"):
                self._ws.rename(f"{self._rel}.{i}", f"{self._rel}.{i + 1}")
        self._ws.rename(self._rel, f"{self._rel}.1")
