"""The four roles: each builds a prompt, obtains a validated answer, and maps it to files and events."""

from __future__ import annotations

from collections.abc import Callable

from agent.command_context import CommandContext, Outcome

__all__ = ["handler_for"]


def handler_for(role: str) -> Callable[[CommandContext], Outcome]:
    if role == "builder":
        from agent.roles.builder import handle
    elif role == "reviewer":
        from agent.roles.reviewer import handle
    elif role == "spec_maintainer":
        from agent.roles.spec_maintainer import handle
    elif role == "orchestration":
        from agent.roles.orchestration import handle
    else:
        raise ValueError(f"unknown role {role!r}")
    return handle
