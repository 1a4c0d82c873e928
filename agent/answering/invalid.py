"""An answer the agent will not use: raised while checking one, caught by the answer loop.

These never reach the wire as they are: the loop sends the message back to the model, and only
when the attempts run out does the command fail, as `invalid_model_response`. They live here, below
the answer loop, so that what checks answers (edits, roles) need not import the loop itself.
"""

from __future__ import annotations

from agent.errors import AgentError

__all__ = ["InvalidAnswer", "StartOver"]


class InvalidAnswer(AgentError):
    """An answer that failed parsing or validation; only ever fed back to the model."""
    code = "invalid_model_response"


class StartOver(InvalidAnswer):
    """An answer whose whole frame is wrong: the next request starts over (narrowed when the role
    has a stricter form) instead of repairing it in the same conversation, where a model tends to
    defend it ("No changes needed" again, even shown the failing values)."""
