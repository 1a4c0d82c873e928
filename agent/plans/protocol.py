"""The pipe protocol between the agent and a plan worker: one JSON object per line (NDJSON).

It runs over the worker's own stdin/stdout pipes, never over the agent's stdout. Parent → worker:
one request, then replies to `llm`, `run` and `test` requests. Worker → parent: `ready`,
`tool_call`, `progress`, `log`, `llm`, `run` (a `tools.run` command, executed by the parent inside
the OS boundary), `test` (the configured test command), and finally `done`.
"""

from __future__ import annotations

import os
import select
import time
from typing import Any

import orjson

__all__ = ["encode", "FrameReader", "write_all", "MAX_FRAME_BYTES"]

# A `done` frame carries the plan's result and output; anything bigger is a runaway worker.
MAX_FRAME_BYTES = 256 * 1024 * 1024


def _default(obj: Any) -> Any:
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf-8", errors="replace")
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


def encode(msg: dict[str, Any]) -> bytes:
    """One protocol line."""
    return orjson.dumps(msg, default=_default) + b"\n"


def write_all(fd: int, data: bytes, deadline: float) -> None:
    """Write everything to a non-blocking fd before `deadline` (time.monotonic); TimeoutError if not."""
    view = memoryview(data)
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("writing to the plan worker timed out")
        _, writable, _ = select.select([], [fd], [], left)
        if not writable:
            continue
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            continue


class FrameReader:
    """Reads lines from a non-blocking fd with a deadline; None at end of file."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = bytearray()
        self._eof = False

    def read(self, deadline: float) -> dict[str, Any] | None:
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[:nl + 1]
                msg = orjson.loads(line)
                if not isinstance(msg, dict):
                    raise ValueError("protocol frame is not an object")
                return msg
            if self._eof:
                return None
            if len(self._buf) > MAX_FRAME_BYTES:
                raise ValueError("protocol frame too large")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("plan worker did not answer in time")
            readable, _, _ = select.select([self.fd], [], [], left)
            if not readable:
                continue
            try:
                chunk = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                self._eof = True
            else:
                self._buf += chunk
