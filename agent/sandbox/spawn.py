"""Starting commands inside the boundary: one `CommandBox` per `tools.run` call or test run.

A box owns a private temp dir (`/tmp` and `$HOME` of its commands), a lifeline, and the launcher
processes it started. `box.kill()` cuts the lifeline, so every launcher kills its whole tree,
then SIGKILLs the process groups as a backstop; `close()` also removes the temp dir.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from types import TracebackType
from typing import Any

from agent.errors import SandboxUnavailable
from agent.pathpolicy import records_commands_must_not_touch
from agent.sandbox.confine import command_env
from agent.sandbox.detect import LAUNCHER, Boundary, current
from agent.sandbox.grants import command_read_dirs, home_dir
from agent.sandbox.lifeline import Lifeline
from agent.sandbox.policy import BWRAP, Policy

__all__ = ["CommandBox", "TMP_PREFIX", "refusal", "ensure_commands_allowed", "wait_for"]

# Private temp dirs are named after the agent's pid, so a restarted agent can remove the stale ones.
TMP_PREFIX = "luallm-sbx-"
_read_dirs: dict[tuple[str, ...], list[str]] = {}
_READ_DIR_INPUTS = ("HOME", "PATH", "PYTHONPATH", "LUALLM_AGENT_SANDBOX_READ")


def refusal(what: str) -> SandboxUnavailable:
    b = current()
    return SandboxUnavailable(f"{what} refused: no OS sandbox is available ({b.reason or 'none'}); "
                              "pass --unsandboxed-commands (or LUALLM_AGENT_UNSANDBOXED_COMMANDS=1) to run it "
                              "without one", mode=b.mode)


def wait_for(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait for `proc` to end; False at the timeout. Wakes the moment it ends (a pidfd), where
    Popen.wait(timeout) polls with sleeps of up to 50 ms — a cost every short command would pay."""
    if proc.poll() is not None:
        return True
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:
        try:
            proc.wait(timeout=max(0.0, timeout_s))
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        ready, _, _ = select.select([fd], [], [], max(0.0, timeout_s))
    finally:
        os.close(fd)
    if not ready:
        return False
    proc.wait()
    return True


def ensure_commands_allowed(what: str) -> None:
    """Raise SandboxUnavailable now (before any model call) if `what` could not run later."""
    if not current().commands_allowed:
        raise refusal(what)


def _command_read_dirs() -> list[str]:
    """Computed once per environment: listing /etc and friends for every command would be waste."""
    key = tuple(os.environ.get(k, "") for k in _READ_DIR_INPUTS)
    if key not in _read_dirs:
        _read_dirs[key] = command_read_dirs()
    return _read_dirs[key]


class CommandBox:
    """Runs commands for one caller inside the boundary; a context manager."""

    def __init__(self, workspace: str, *, what: str = "command", boundary: Boundary | None = None) -> None:
        self.boundary = boundary or current()
        if not self.boundary.commands_allowed:
            raise refusal(what)
        self.workspace = os.path.realpath(workspace)
        self.tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-")
        for sub in ("tmp", "home"):
            os.mkdir(os.path.join(self.tmp, sub), 0o700)
        self.policy = Policy(mode=self.boundary.mode, workspace=self.workspace, tmp=self.tmp, home=home_dir(),
                             execute=_command_read_dirs() if self.boundary.confined else [],
                             landlock_abi=self.boundary.caps.landlock_abi,
                             bwrap=self.boundary.caps.bwrap if self.boundary.mode == BWRAP else None,
                             protect=records_commands_must_not_touch(self.workspace) if self.boundary.confined else [])
        self.lifeline = Lifeline()
        self.procs: list[subprocess.Popen[bytes]] = []
        self._policy_text = self.policy.to_text()

    def argv(self, argv: list[str]) -> list[str]:
        """The launcher command line that runs `argv` confined."""
        return [sys.executable, "-I", "-S", LAUNCHER, "--lifeline", str(self.lifeline.child_fd),
                "--policy", self._policy_text, "--", *argv]

    def env(self, env: dict[str, str]) -> dict[str, str]:
        return command_env(self.policy, env)

    def popen(self, argv: list[str], *, env: dict[str, str], **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start `argv` in the workspace inside the boundary (own session; stdio as in `kwargs`)."""
        if self.lifeline.cut_already:
            raise RuntimeError("this command box was closed")
        proc = subprocess.Popen(self.argv(argv), env=self.env(env), cwd=self.workspace, start_new_session=True,
                                close_fds=True, pass_fds=(self.lifeline.child_fd,), **kwargs)
        self.procs.append(proc)
        return proc

    def kill(self, grace_s: float = 1.0) -> None:
        """Stop every command of this box and everything they started; returns when they are gone."""
        self.lifeline.cut()
        deadline = time.monotonic() + grace_s
        for p in self.procs:
            wait_for(p, deadline - time.monotonic())
        for p in self.procs:   # backstop: a launcher that did not exit in time
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                p.wait()

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> CommandBox:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
