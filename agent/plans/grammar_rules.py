"""The rule set the plan grammar's builders share: GBNF rules plus the files an edit may copy from.

Its own module so that the builders of tokens, code and the answer table (`grammar_lexical`,
`grammar_code`, `grammar_answer`) can share it without importing one another.
"""

from __future__ import annotations

from agent.plans.edit_anchors import anchored_text
from agent.plans.gbnf import Rules
from agent.plans.gbnf import lit as _lit

__all__ = ["PlanRules", "lua_literal"]


class PlanRules(Rules):
    """The grammar's rules, with what its builders share."""

    def __init__(self, anchors: dict[str, str] | None = None) -> None:
        super().__init__()
        self.memo: dict[str, str] = {}      # answer sub-schema (as JSON) -> its rule, shared by variants
        self.anchors = anchors or {}        # path -> the text a plan's edit copies from (see edit_anchors)
        self._olds: list[tuple[str, str]] | None = None

    def olds(self) -> list[tuple[str, str]]:
        """(the path as a Lua string literal, the rule of its `old` text) for each anchored file."""
        if self._olds is None:
            self._olds = []
            for path, text in self.anchors.items():
                old = anchored_text(self, self.fresh(f"old-{path}"), text)
                if old is not None:
                    self._olds.append((lua_literal(path), old))
        return self._olds


def lua_literal(value: str | bool) -> str:
    """A Lua literal of `value` as GBNF alternatives (both quote styles for a string)."""
    if isinstance(value, bool):
        return _lit("true" if value else "false")
    return " | ".join(_lit(q + value.replace("\\", "\\\\").replace(q, "\\" + q) + q) for q in "\"'")
