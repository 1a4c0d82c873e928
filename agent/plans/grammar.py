"""A llama.cpp GBNF grammar for this project's Lua plan subset, per role.

One source of truth: the tool registry (`TOOL_SPECS`: names, positional parameters, options), the
role's answer schema (`schemas/answers/<role>.json`: the keys and value kinds of the table `run`
returns) and the lint's name lists (keywords, forbidden and sandbox globals). The grammar is a guide
for sampling, not the validator: whatever it lets through still goes through `check_plan` (lupa's
`load` plus the lint) before it runs.

The subset (MASTER-SPEC §13 "Grammar-constrained plans"):
- the reply is a ```lua fence (what `find_lua_plan` reads);
- the chunk: one `function run(context) ... end` whose every `return` is a table shaped like the
  answer (keys, value kinds, `allOf` if/then requirements, `minItems`/`maxItems` from the schema);
  no helper functions;
- statements: `local`, single assignment, calls, if/elseif/else, numeric and generic `for`
  (ipairs, pairs, gmatch), while, repeat, `break` inside loops;
- expressions: short strings with Lua escapes, long strings `[[...]]` / `[==[...]==]`, numbers,
  nil/true/false, table constructors (`k = v`, `[e] = v`, positional), field/index/method access,
  calls of `tools.<allowed tool>`, of allow-listed `string`/`table`/`math` functions, builtins and
  values, Lua operators (`..`, `~=`, `and`/`or`/`not`, `#`).
Every accepted text that `find_lua_plan` extracts compiles with Lua 5.4 (proven by a sampling
test): keywords are never names, `--` never starts by accident (`a--b`), a number is never glued
to `..`, `[[` never opens by accident (`t[ [[x]] ]`), and no string or comment holds "```", which
would cut the fence.

This module assembles the grammar for a role; its pieces are built by `grammar_lexical` (tokens),
`grammar_code` (expressions and statements) and `grammar_answer` (the answer table), on the rule
set of `grammar_rules`.
"""

from __future__ import annotations

import functools

from agent.plans.grammar_answer import answer_schema, object_rule
from agent.plans.grammar_code import (
    BUILTIN_FUNCTIONS,
    MATH_CONSTANTS,
    MATH_FUNCTIONS,
    STRING_FUNCTIONS,
    TABLE_FUNCTIONS,
    expression_rules,
    statement_rules,
)
from agent.plans.grammar_lexical import lexical_rules
from agent.plans.grammar_rules import PlanRules
from agent.plans.lint import ALLOWED_GLOBALS, FORBIDDEN, KEYWORDS
from agent.plans.tools import TOOL_NAMES, TOOL_SPECS
from agent.protocol import ROLES

# The library-call lists are defined with the expressions that use them (grammar_code) and named
# here too: they are this grammar's public surface, the names a plan may call.
__all__ = ["plan_grammar", "STRING_FUNCTIONS", "TABLE_FUNCTIONS", "MATH_FUNCTIONS", "MATH_CONSTANTS",
           "BUILTIN_FUNCTIONS", "RESERVED_NAMES"]

# Never a variable name: keywords would not compile; forbidden globals, library tables and tool names
# as bare names are exactly the mistakes the lint rejects (`os.execute`, `write(...)`, `string.dump`);
# library tables and builtins are reached through their own rules (only allow-listed functions).
RESERVED_NAMES: frozenset[str] = frozenset(KEYWORDS | FORBIDDEN | (ALLOWED_GLOBALS - {"context"}) | set(TOOL_NAMES))


# -- the chunk --------------------------------------------------------------------------------
def _chunk(g: PlanRules) -> None:
    g.add("rundef", '"function run(" ws name ws ")" block-run sp "end"')
    # The plan is `run` alone (the subset has no top-level code and no helper functions), after
    # a comment at most: there no token comes before `--` that it could glue to.
    g.add("chunk", "comment? ws rundef ws")
    g.add("root", '"```lua\\n" chunk "\\n```"')


@functools.lru_cache(maxsize=32)
def plan_grammar(role: str, tools: tuple[str, ...] | None = None) -> str:
    """The GBNF grammar (llama.cpp's `grammar` field) for `role`'s Lua plans calling only `tools`.

    `tools=None` allows every tool; see `agent.plans.tools.plan_tools_for(role)`.
    ValueError for an unknown role or tool.
    """
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r} (roles: {', '.join(ROLES)})")
    unknown = sorted(set(tools or ()) - set(TOOL_NAMES))
    if unknown:
        raise ValueError(f"unknown tool {unknown[0]!r} (tools: {', '.join(TOOL_NAMES)})")
    specs = [s for s in TOOL_SPECS if tools is None or s.name in tools]
    g = PlanRules()
    _chunk(g)
    answer = object_rule(g, answer_schema(role), "answer")
    statement_rules(g, answer)
    expression_rules(g, specs)
    lexical_rules(g, RESERVED_NAMES)
    return g.text()
