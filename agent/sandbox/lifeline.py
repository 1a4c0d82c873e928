"""Lifelines: a pipe whose write end only the agent holds, so a child learns at once that it is gone.

The kernel closes the write end when the agent exits for any reason, SIGKILL included. The
launcher watches its read end with `select`; the plan worker, which may be deep in a C call,
arms it with O_ASYNC so the kernel sends SIGIO on hang-up, whose default action ends the worker
without running a single Python instruction.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal

__all__ = ["Lifeline", "arm_sigio", "ENV_FD"]

ENV_FD = "LUALLM_AGENT_LIFELINE_FD"


class Lifeline:
    """The agent's end: pass `child_fd` to children (pass_fds), call `cut()` to let them go."""

    def __init__(self) -> None:
        self.child_fd, self._keep = os.pipe2(os.O_CLOEXEC)
        os.set_inheritable(self.child_fd, True)   # only through pass_fds: Popen closes the rest

    def close_child_end(self) -> None:
        """After the last spawn: the children hold their own copies."""
        if self.child_fd >= 0:
            os.close(self.child_fd)
            self.child_fd = -1

    def cut(self) -> None:
        """Close the write end: every child watching this lifeline stops (kills its tree) now."""
        if self._keep >= 0:
            os.close(self._keep)
            self._keep = -1
        self.close_child_end()

    @property
    def cut_already(self) -> bool:
        return self._keep < 0


def arm_sigio(fd: int) -> None:
    """In the child: die by SIGIO (default action: terminate) as soon as the agent's end closes."""
    signal.signal(signal.SIGIO, signal.SIG_DFL)
    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC | os.O_NONBLOCK)
    # The agent may have died before O_ASYNC was set: then no signal will ever come.
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if poller.poll(0):
        os._exit(0)
