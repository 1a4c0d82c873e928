"""Cut a plan where it began to repeat itself, so that the model can write the rest of it.

Measured (Qwen2.5-Coder-0.5B under real lorch, feature-cart, held to the plan grammar): in every run
the builder's plan started well — an edit of cart.py, then `tools.write("tests/test_cart.py", [[` —
and a few asserts into the test file repeated the same lines until its token limit. Asked again,
at any temperature, with or without the worked example, it looped again; the JSON answer it fell
back to was refused too. No plan came out of the command at all.

`cut_loop` keeps the plan up to the end of the first copy of the repeated block, closes what is
open there (the string, then the call or table it is an argument of) and checks that the result is
a complete statement list inside `run`: `head .. "\\nend"` must compile. The model is then asked for
the rest of `run` only (a grammar whose root is the rest of the body: `rest_of_run_grammar`). The
joined plan is checked and run like any other; the agent adds only closing brackets, never text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.models.repetition import repeating_tail
from agent.plans.unclosed import compiler

__all__ = ["LoopCut", "cut_loop", "rest_of_run_grammar"]

_FENCE = re.compile(r"```lua[ \t]*\n")
_RUN = "function run("
# What may close the statement the string was part of, fewest first: the call it is an argument of,
# a table field, a table in a call.
_AFTER_STRING = ("", ")", "}", "})", ")}", "}}", "}})")
_ROOT = re.compile(r"^root ::= .*$", re.M)
# A string that holds these has swallowed the plan's own end (or the reply's fence): the loop is
# in what came after, and cutting there would write the plan's code into a file.
_SWALLOWED = re.compile(r"^(end\b|``)", re.M)


@dataclass(frozen=True)
class LoopCut:
    head: str        # the plan's source from `function run(` on, cut and closed
    line: int        # the plan line where the cut is
    closer: str      # what the agent added: "]])", "')", "" …


def cut_loop(reply: str) -> LoopCut | None:
    """The plan in `reply` cut after the first copy of the block it ends repeating, closed; or None
    when the reply does not end in a loop, the loop is not inside the plan, or no closing compiles."""
    loop = repeating_tail(reply)
    if loop is None:
        return None
    fence = _FENCE.search(reply)
    start = reply.find(_RUN, fence.end() if fence else 0)
    if start < 0 or loop.start < start + len(_RUN):
        return None
    end = loop.first_copy_end
    # The first copy may begin mid-line (any rotation of the block repeats): end it at the next line end.
    line_end = reply.find("\n", end - 1, end - 1 + loop.period)
    text = reply[start:line_end + 1 if line_end >= 0 else end]
    state = _open_at_end(text)
    if state is None:
        return None
    kind, mark, opened = state
    if kind == "long" and _SWALLOWED.search(text, opened):
        return None
    if kind == "code" or kind == "long":
        # End on a line of its own: a cut mid-line would leave half a statement or half a line of
        # the file.
        last = text.rfind("\n")
        if last <= 0:
            return None
        text = text[:last + 1] if kind == "long" else text[:last]
        state = _open_at_end(text)
        if state is None or state[0] != kind:
            return None
        mark = state[1]
    elif kind == "short" and _odd_backslashes(text):
        text = text[:-1]                 # a dangling escape would swallow the closing quote
    string_close = {"code": "", "long": f"]{mark}]", "short": mark}[kind]
    compiles = compiler()
    for after in _AFTER_STRING if kind != "code" else ("",):
        closer = string_close + after
        if compiles(f"{text}{closer}\nend"):
            return LoopCut(text + closer, text.count("\n") + 1, closer)
    return None


def rest_of_run_grammar(plan_grammar: str) -> str:
    """The role's plan grammar with its root moved to the rest of `run`'s body: statements, the
    answer's `return`, `end` (and an optional closing fence)."""
    root = 'root ::= block-run sp "end" ("\\n```")?'
    if not _ROOT.search(plan_grammar):
        raise ValueError("the plan grammar has no root rule")
    return _ROOT.sub(lambda _: root, plan_grammar, count=1)


def _odd_backslashes(text: str) -> bool:
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def _open_at_end(source: str) -> tuple[str, str, int] | None:
    """What is open at the end of `source`, and where it opened: ("code", "", 0), ("long",
    "=" * level, i) for a long string, ("short", quote, i) for a quoted one; None inside a comment
    (no cut there)."""
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("--", i):
            long = re.match(r"\[(=*)\[", source[i + 2:i + 2 + 64])
            if long:
                end = source.find(f"]{long.group(1)}]", i + 2 + long.end())
            else:
                end = source.find("\n", i)
            if end < 0:
                return None
            i = end + 1
        elif c == "[" and (long := re.match(r"\[(=*)\[", source[i:i + 64])):
            end = source.find(f"]{long.group(1)}]", i + long.end())
            if end < 0:
                return ("long", long.group(1), i)
            i = end + len(long.group(1)) + 2
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c:
                if source[j] == "\n":
                    return None          # an unfinished short string: not ours to close
                j += 2 if source[j] == "\\" else 1
            if j >= n:
                return ("short", c, i)
            i = j + 1
        else:
            i += 1
    return ("code", "", 0)
