"""What a person sees while a task runs: the state, the node and the elapsed time.

On a terminal one status line is redrawn in place (every transition and twice a second); when
stdout is not a terminal every change is one plain line, so logs and CI output stay readable.
At the end a table of nodes: id, action, status, retries, seconds.
"""

from __future__ import annotations

import threading
import time
from typing import Any, TextIO

__all__ = ["Progress", "summary_table"]


class Progress:
    def __init__(self, stream: TextIO, *, live: bool) -> None:
        self.stream = stream
        self.live = live
        self._lock = threading.Lock()
        self._state = "pending"
        self._node: str | None = None
        self._t0 = time.monotonic()
        self._base = 0.0
        self._last: tuple[str, str | None] | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        if live:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def _elapsed(self) -> float:
        return self._base + time.monotonic() - self._t0

    def _line(self) -> str:
        node = f" node {self._node}" if self._node else ""
        return f"[{self._elapsed():7.1f}s] {self._state.upper()}{node}"

    def _tick(self) -> None:
        while not self._done.wait(0.5):
            with self._lock:
                self.stream.write("\r\033[K" + self._line())
                self.stream.flush()

    def show(self, state: str, node: str | None, elapsed: float) -> None:
        with self._lock:
            self._state, self._node = state, node
            self._base, self._t0 = elapsed, time.monotonic()
            if self.live:
                self.stream.write("\r\033[K" + self._line())
            elif self._last != (state, node):
                self.stream.write(self._line() + "\n")
            self._last = (state, node)
            self.stream.flush()

    def say(self, text: str) -> None:
        with self._lock:
            self.stream.write(("\r\033[K" if self.live else "") + f"  {text}\n")
            if self.live:
                self.stream.write(self._line())
            self.stream.flush()

    def close(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()


def summary_table(task: dict[str, Any]) -> str:
    nodes = (task.get("graph") or {}).get("nodes") or []
    rows = [("node", "action", "status", "retries", "time")]
    rows += [(str(n["id"]), str(n["action"]), str(n["status"]), str(n.get("retries", 0)),
              f"{float(n.get('elapsed_s') or 0.0):.2f}s") for n in nodes]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    head = (f"task {task['id']}: {task['status'].upper()} after {task['step_count']} step(s), "
            f"{float(task.get('active_seconds') or 0):.1f}s active")
    extra = [f"error: {task['error']}"] if task.get("error") else []
    if task.get("termination_reason"):
        extra.append(f"termination_reason: {task['termination_reason']}")
    return "\n".join([head, *lines, *extra])
