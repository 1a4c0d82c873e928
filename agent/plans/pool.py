"""Parent side of plan workers: spawn (never fork the threaded agent), keep one warm, kill.

A worker is `python -m agent.plans.worker` started with `subprocess` (fork+exec in C, safe in a
multi-threaded process) in its own session, holding the read end of a lifeline whose write end
only this process keeps: when the agent dies, even by SIGKILL, the worker gets SIGIO and dies too.
One warm worker waits with lupa imported; each plan takes it and a fresh one is spawned
after the plan, so no state survives from one plan to the next.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from agent.plans.commands import scrubbed_env
from agent.plans.protocol import FrameReader, encode, write_all
from agent.sandbox.lifeline import ENV_FD, Lifeline

__all__ = ["Worker", "WorkerPool", "POOL", "shutdown_workers", "prewarm"]

_PKG_ROOT = str(Path(__file__).resolve().parents[2])


def _worker_env() -> dict[str, str]:
    env = scrubbed_env()
    # The worker must import this very package, even when it is not installed.
    env["PYTHONPATH"] = _PKG_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Worker:
    """One worker process and its pipes."""

    def __init__(self) -> None:
        self.lifeline = Lifeline()
        env = _worker_env()
        env[ENV_FD] = str(self.lifeline.child_fd)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "agent.plans.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=None, env=env, start_new_session=True, close_fds=True, pass_fds=(self.lifeline.child_fd,))
        except BaseException:
            self.lifeline.cut()
            raise
        self.lifeline.close_child_end()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        os.set_blocking(self.proc.stdin.fileno(), False)
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.reader = FrameReader(self.proc.stdout.fileno())

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, msg: dict[str, Any], deadline: float) -> None:
        assert self.proc.stdin is not None
        write_all(self.proc.stdin.fileno(), encode(msg), deadline)

    def recv(self, deadline: float) -> dict[str, Any] | None:
        return self.reader.read(deadline)

    def kill(self) -> None:
        """SIGKILL the worker's group; reap it."""
        self.lifeline.cut()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def finish(self) -> None:
        """After `done` the worker has nothing left to do: kill rather than poll for its exit."""
        self.kill()


class WorkerPool:
    """Hands out one fresh worker per plan, keeping one spare warm."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._warm: Worker | None = None
        self._busy: set[Worker] = set()
        self._generation = 0

    def prewarm(self) -> None:
        """Start the spare worker now (e.g. at agent start-up) so the first plan does not wait."""
        with self._lock:
            if self._warm is None or not self._warm.alive():
                self._warm = Worker()

    def acquire(self) -> tuple[Worker, int]:
        with self._lock:
            worker, self._warm = self._warm, None
            if worker is None or not worker.alive():
                if worker is not None:
                    worker.kill()
                worker = Worker()
            self._busy.add(worker)
            return worker, self._generation

    def release(self, worker: Worker, generation: int, *, killed: bool = False, replace: bool = True) -> None:
        """Retire a worker that served its plan, and spawn the next spare (unless shut down since)."""
        if not killed:
            worker.finish()
        with self._lock:
            self._busy.discard(worker)
            if replace and generation == self._generation and self._warm is None:
                try:
                    self._warm = Worker()
                except OSError:
                    self._warm = None

    def kill_busy(self, worker: Worker) -> None:
        worker.kill()

    def shutdown(self) -> None:
        """Kill the spare and every running worker (fast: SIGKILL, no waiting for plans)."""
        with self._lock:
            self._generation += 1
            victims = [w for w in (self._warm, *self._busy) if w is not None]
            self._warm = None
            self._busy.clear()
        for w in victims:
            w.kill()


POOL = WorkerPool()
atexit.register(POOL.shutdown)


def shutdown_workers() -> None:
    """Kill any warm or running plan worker (called at agent shutdown)."""
    POOL.shutdown()


def prewarm() -> None:
    """Spawn the warm worker now."""
    POOL.prewarm()
