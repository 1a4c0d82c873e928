"""Bounding lorch's loops from the agent's side.

lorch repeats review ↔ implement_changes and update_spec ↔ implement_changes without limit, so a
reviewer that never approves would run commands until lorch's own timeout. The agent counts the rounds of
one loop on disk — the completed commands of this action under this idempotency key, which lorch
keeps for every round of one task within one run and changes for a new run — so a restarted
agent keeps counting. The round that reaches the limit and still asks for changes ends the run:
the role's loop-limit error (then exit 3), naming what is still unresolved.
"""

from __future__ import annotations

from typing import Any

from agent.command_context import CommandContext
from agent.errors import LoopLimit
from agent.receipts import ReceiptStore

__all__ = ["current_round", "end_loop"]


def current_round(ctx: CommandContext) -> int:
    """This command's round in its loop: 1 for the first review (or update_spec) of the task."""
    return ReceiptStore(ctx.workspace).completed(ctx.cmd.task_id, ctx.cmd.idempotency_key, ctx.cmd.action) + 1


def end_loop(error: type[LoopLimit], ctx: CommandContext, rounds: int, limit: int, flag: str,
             unresolved: list[str]) -> LoopLimit:
    """The loop-limit error for this task, naming the unresolved findings or required changes."""
    shown = "; ".join(unresolved[:10]) or "(none recorded)"
    ctx.log("warn", "loop limit reached", task_id=ctx.cmd.task_id, action=ctx.cmd.action, rounds=rounds,
            limit=limit)
    details: dict[str, Any] = {"rounds": rounds, "max_rounds": limit, "unresolved": unresolved[:20]}
    return error(f"{ctx.cmd.action} of {ctx.cmd.task_id}: {rounds} rounds (limit {limit}, {flag}) and changes "
                 f"are still requested; ending the loop. Unresolved: {shown}", **details)
