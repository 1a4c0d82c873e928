"""Time limits of one streamed HTTP answer: late first byte, stall, deadline.

httpx bounds each socket read with one fixed timeout, which cannot tell "still generating" from
"hung". `StreamWatchdog` keeps three limits instead, measured on the monotonic clock:

* `first_byte`: no body byte within `first_byte_s` of the request start;
* `stall`: bytes flowed, then none for `stall_s`;
* `deadline`: the command deadline passed, however lively the stream;
* `answer_by`: the caller's own earlier limit passed (it keeps the reply so far, see
  `ModelRequest.answer_by`).

A daemon thread sleeps until the nearest limit; when one passes it records why (`fired`) and shuts
the socket down, which wakes the blocked read at once. The reader also calls `expired()` after every
chunk, which is how limits are enforced where there is no socket (httpx's MockTransport in tests).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

__all__ = ["StreamWatchdog", "timeout_kind"]


class StreamWatchdog:
    def __init__(self, *, first_byte_s: float, stall_s: float, seconds_left: float | None,
                 monotonic: Callable[[], float] = time.monotonic, answer_in: float | None = None) -> None:
        self._now = monotonic
        self.started = monotonic()
        self.first_byte_s = first_byte_s
        self.stall_s = stall_s
        self._deadline = None if seconds_left is None else self.started + seconds_left
        self._answer_by = None if answer_in is None else self.started + answer_in
        self._last: float | None = None  # when the last bytes arrived
        self.first_byte_at: float | None = None
        self.fired: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._finished = False
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self, extensions: dict[str, Any]) -> None:
        """Watch the connection of a response whose headers arrived (`response.extensions`)."""
        stream = extensions.get("network_stream")
        get_info = getattr(stream, "get_extra_info", None)
        sock = get_info("socket") if callable(get_info) else None
        self._socket = sock if isinstance(sock, socket.socket) else None
        self._thread = threading.Thread(target=self._run, name="model-stream-watchdog", daemon=True)
        self._thread.start()

    def progress(self) -> None:
        now = self._now()
        if self.first_byte_at is None:
            self.first_byte_at = now
        self._last = now

    def expired(self) -> str | None:
        """Which limit has passed ("deadline", "first_byte", "stall"), if any; remembered in `fired`."""
        if self.fired is not None:
            return self.fired
        now = self._now()
        if now >= self._next_limit()[0]:
            self.fired = self._next_limit()[1]
        return self.fired

    def finish(self) -> None:
        """The reader is done: after this the watchdog never touches the connection."""
        with self._lock:
            self._finished = True
        self._stop.set()

    def elapsed_ms(self, at: float | None = None) -> float:
        return ((self._now() if at is None else at) - self.started) * 1000.0

    def _next_limit(self) -> tuple[float, str]:
        # The first-byte window is a floor: progress (llama.cpp streams prompt-processing progress
        # before the first token) can only extend it, never cut a request sooner than that.
        limit, why = self.started + self.first_byte_s, "first_byte"
        if self._last is not None:
            limit, why = max(limit, self._last + self.stall_s), "stall"
        if self._deadline is not None and self._deadline <= limit:
            limit, why = self._deadline, "deadline"
        if self._answer_by is not None and self._answer_by < limit:
            return self._answer_by, "answer_by"
        return limit, why

    def _run(self) -> None:
        while True:
            wait = self._next_limit()[0] - self._now()
            if self._stop.wait(max(0.0, wait)):
                return
            with self._lock:
                if self._finished:
                    return
                if self.expired() is None:
                    continue  # bytes arrived meanwhile: sleep until the new limit
                self._interrupt()
                return

    def _interrupt(self) -> None:
        if self._socket is None:
            return
        try:
            # The plain socket call, also for TLS sockets: SSLSocket.shutdown would drop its SSL
            # object under the reading thread's feet. The reader then sees EOF or a read error.
            socket.socket.shutdown(self._socket, socket.SHUT_RDWR)
        except OSError:
            pass


def timeout_kind(exc: httpx.TimeoutException, watchdog: StreamWatchdog) -> str:
    """Which limit an httpx timeout stands for, the watchdog's own first."""
    if isinstance(exc, httpx.ConnectTimeout):
        return "connect"
    if isinstance(exc, httpx.WriteTimeout):
        return "write"
    if isinstance(exc, httpx.PoolTimeout):
        return "pool"
    if watchdog.fired:
        return watchdog.fired
    # httpx's own read timeout (the backstop, or while waiting for headers)
    expired = watchdog.expired()
    if expired:
        return expired
    return "first_byte" if watchdog.first_byte_at is None else "stall"
