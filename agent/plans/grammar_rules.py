"""The rule set the plan grammar's builders share: GBNF rules and memoised answer sub-rules.

Its own module so that the builders of tokens, code and the answer table (`grammar_lexical`,
`grammar_code`, `grammar_answer`) can share it without importing one another.
"""

from __future__ import annotations

from agent.plans.gbnf import Rules
from agent.plans.gbnf import lit as _lit

__all__ = ["PlanRules", "lua_literal"]


class PlanRules(Rules):
    """The grammar's rules, with what its builders share."""

    def __init__(self) -> None:
        super().__init__()
        self.memo: dict[str, str] = {}      # answer sub-schema (as JSON) -> its rule, shared by variants


def lua_literal(value: str | bool) -> str:
    """A Lua literal of `value` as GBNF alternatives (both quote styles for a string)."""
    if isinstance(value, bool):
        return _lit("true" if value else "false")
    return " | ".join(_lit(q + value.replace("\\", "\\\\").replace(q, "\\" + q) + q) for q in "\"'")
