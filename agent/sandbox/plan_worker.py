"""The plan worker's policy: read the interpreter and libraries, write the workspace, nothing else.

The worker needs no socket (it talks to the agent over inherited pipes) and runs no program
(`tools.run` and `tools.test` are executed by the agent, inside a `CommandBox`), so a lupa or Lua
escape lands in a process that can write only the workspace, read no secret, execute nothing,
open no socket and signal nothing outside itself.
"""

from __future__ import annotations

import os

from agent.sandbox.detect import current
from agent.sandbox.grants import worker_read_dirs
from agent.sandbox.policy import NONE, Policy

__all__ = ["worker_policy"]

_read_dirs: list[str] | None = None


def worker_policy(workspace: str, extra_read: tuple[str, ...] = ()) -> Policy | None:
    """What the worker serving a plan in `workspace` may touch (sent to it with the request).

    None only when the user turned the sandbox off (`LUALLM_AGENT_SANDBOX=none`); without Landlock
    the worker still takes its sockets away (seccomp).
    """
    global _read_dirs
    b = current()
    if b.requested == NONE:
        return None
    if _read_dirs is None:
        _read_dirs = worker_read_dirs()
    read = [*_read_dirs, *(d for d in extra_read if os.path.isdir(d))]
    return Policy(b.mode, os.path.realpath(workspace), read=read, landlock_abi=b.caps.landlock_abi)
