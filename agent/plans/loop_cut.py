"""Cut a plan where it began to repeat itself, so that the model can write the rest of it.

Why: a small model held to the plan grammar often starts a plan well, then repeats the same
lines inside a file's text until its token limit; asked again, at any temperature, it loops again,
so re-asking yields no plan at all. Asked only for the rest, it usually finishes.

`cut_loop` keeps the plan up to the end of the first copy of the repeated block, closes what is
open there (the string, then the call or table it is an argument of) and checks that the result is
a complete statement list inside `run`: `head .. "\\nend"` must compile. The model is then asked for
the rest of `run` only (a grammar whose root is the rest of the body: `rest_of_run_grammar`). The
joined plan is checked and run like any other; the agent adds only closing brackets, never text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.models.repetition import repeating_tail
from agent.plans.tools import TOOL_SPECS
from agent.plans.unclosed import LONG_OPENING, compiler

__all__ = ["LoopCut", "cut_loop", "rest_of_run_grammar"]

_FENCE = re.compile(r"```lua[ \t]*\n")
_RUN = "function run("
# What may close the statement the string was part of, fewest first: the call it is an argument of,
# a table field, a table in a call.
_AFTER_STRING = ("", ")", "}", "})", ")}", "}}", "}})")
_ROOT = re.compile(r"^root ::= .*$", re.M)
_CALL = re.compile(r"tools\.(\w+)\s*$")
# A string that holds these has swallowed the plan's own end (or the reply's fence): the loop is
# in what came after, and cutting there would write the plan's code into a file.
_SWALLOWED = re.compile(r"^(end\b|``)", re.M)


@dataclass(frozen=True)
class LoopCut:
    head: str               # the plan's source from `function run(` on, cut and closed
    line: int               # the plan line where the cut is
    closer: str             # what the agent added: "]])", "')", "'" …
    missing: tuple[str, ...] = ()   # a tool's required arguments still to come (then its `)`)


@dataclass
class _Open:
    """What is open at the end of a text: ("code" | "long" | "short"), the string's mark (the long
    bracket's `=`s or the quote), where it opened, and the brackets open in code around it as
    [char, position, commas so far]."""

    kind: str
    mark: str = ""
    at: int = 0
    brackets: list[list[object]] = field(default_factory=list)


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
    line_end = reply.find("\n", end - 1, end - 1 + (end - loop.start))
    text = reply[start:line_end + 1 if line_end >= 0 else end]
    state = _open_at_end(text)
    if state is None or (state.kind == "long" and _SWALLOWED.search(text, state.at)):
        return None
    if state.kind in ("code", "long"):
        # End on a line of its own: a cut mid-line would leave half a statement or half a line of
        # the file.
        last = text.rfind("\n")
        if last <= 0:
            return None
        text = text[:last + 1]   # in code the closing brackets then go on a line of their own
        again = _open_at_end(text)
        if again is None or again.kind != state.kind:
            return None
        state = again
    elif _odd_backslashes(text):
        text = text[:-1]                 # a dangling escape would swallow the closing quote
    string_close = {"code": "", "long": f"]{state.mark}]", "short": state.mark}[state.kind]
    compiles = compiler()
    missing = _missing_arguments(text, state)
    if missing:
        # A tool call whose later arguments are still due (an edit cut inside `old`): the model
        # writes them, so the call is not left without its `new`.
        placeholders = ", ''" * len(missing)
        if compiles(f"{text}{string_close}{placeholders})\nend"):
            return LoopCut(text + string_close, text.count("\n") + 1, string_close, missing)
    for after in _AFTER_STRING:
        # In code too: the cut may fall in a call's arguments (a model may loop on comment lines
        # between an edit's arguments).
        closer = string_close + after
        if compiles(f"{text}{closer}\nend"):
            return LoopCut(text + closer, text.count("\n") + 1, closer)
    return None


def rest_of_run_grammar(plan_grammar: str, missing: int = 0) -> str:
    """The role's plan grammar with its root moved to the rest of `run`'s body: first the `missing`
    arguments of the call the cut left open and its `)`, then statements, the answer's `return`,
    `end` (and an optional closing fence). The missing arguments are string literals: asked for
    "the remaining argument (new)", a small model may write the name `new` itself, and the edit
    would run without its new text."""
    call = f'(ws "," ws (sstr | lstr)){{{missing}}} ws ")" ' if missing else ""
    root = f'root ::= {call}block-run sp "end" ("\\n```")?'
    if not _ROOT.search(plan_grammar):
        raise ValueError("the plan grammar has no root rule")
    return _ROOT.sub(lambda _: root, plan_grammar, count=1)


def _missing_arguments(text: str, state: _Open) -> tuple[str, ...]:
    """The required parameters of the tool whose call the open string is an argument of, after it."""
    if state.kind == "code" or not state.brackets or state.brackets[-1][0] != "(":
        return ()
    _, paren, commas = state.brackets[-1]
    assert isinstance(paren, int) and isinstance(commas, int)
    call = _CALL.search(text[:paren])
    spec = next((s for s in TOOL_SPECS if call and s.name == call.group(1)), None)
    if spec is None:
        return ()
    return spec.required[commas + 1:]


def _odd_backslashes(text: str) -> bool:
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def _open_at_end(source: str) -> _Open | None:
    """What is open at the end of `source` (see `_Open`); None inside a comment or an unfinished
    short string's line end (no cut there)."""
    brackets: list[list[object]] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("--", i):
            long = LONG_OPENING.match(source, i + 2)
            if long:
                end = source.find(f"]{long.group(1)}]", long.end())
                i = end + len(long.group(1)) + 2
            else:
                end = source.find("\n", i)
                i = end + 1
            if end < 0:
                return None
        elif c == "[" and (long := LONG_OPENING.match(source, i)):
            end = source.find(f"]{long.group(1)}]", long.end())
            if end < 0:
                return _Open("long", long.group(1), i, brackets)
            i = end + len(long.group(1)) + 2
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c:
                if source[j] == "\n":
                    return None          # an unfinished short string: not ours to close
                j += 2 if source[j] == "\\" else 1
            if j >= n:
                return _Open("short", c, i, brackets)
            i = j + 1
        else:
            if c in "({[":
                brackets.append([c, i, 0])
            elif c in ")}]" and brackets:
                brackets.pop()
            elif c == "," and brackets:
                commas = brackets[-1][2]
                assert isinstance(commas, int)
                brackets[-1][2] = commas + 1
            i += 1
    return _Open("code")
