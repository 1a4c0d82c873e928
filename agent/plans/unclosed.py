"""Close a long string that swallowed the rest of a plan.

Why: a small model writing a file as `tools.write("tests/x.py", [[ ...` may go on with its own
plan code without the closing `]])`; all of it becomes text of the string, the grammar keeps it
there, and the reply runs to its token limit with no plan at all.

`close_swallowed_string` finds where the string's text turns back into plan code and puts the
closing bracket there, keeping the first cut that compiles. It only ever closes a string the model
opened, never changes a character the model wrote, and gives up (None) unless a clean cut exists;
what the repaired plan then does is checked and run like any other plan.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

__all__ = ["close_swallowed_string", "has_unclosed_bracket", "compiler", "LONG_OPENING"]

_UNFINISHED = re.compile(r"unfinished long string \(starting at line (\d+)\)")
LONG_OPENING = re.compile(r"\[(=*)\[")   # a long bracket `[[` / `[==[`: the `=`s are group 1
# A line of the string's text that reads as plan code: where the model meant the string to end.
_CODE_LINE = re.compile(r"[ \t]*(if|local|return|tools\.|error\(|end\b|for|while)")
_RUN_END = re.compile(r"^end\b[^\n]*$", re.M)   # `end` at column 0: what closes `function run`
# What may follow the closing bracket: the call or table the string was an argument or field of.
_CLOSERS = ("]])", "]]", "]]}", "]]})", "]]},", "]])}")
_MAX_CANDIDATES = 400


def has_unclosed_bracket(source: str) -> bool:
    """A cheap text test, before any compiling: a long bracket `[[` / `[=[` … with no closing one
    after it. False for nearly every plan, so a plan is compiled once, by the sandbox's own check."""
    pos = 0
    while (m := LONG_OPENING.search(source, pos)) is not None:
        end = source.find("]" + m.group(1) + "]", m.end())
        if end < 0:
            return True
        pos = end + len(m.group(1)) + 2
    return False


def close_swallowed_string(source: str, error: str) -> tuple[str, int] | None:
    """(`source` with its unfinished long string closed where plan code resumes, the line of the
    closing bracket), or None.

    `error` is the compiler's message; only "unfinished long string (starting at line N)" is repaired.
    """
    m = _UNFINISHED.search(error)
    if m is None:
        return None
    lines = source.split("\n")
    start = int(m.group(1)) - 1
    if not 0 <= start < len(lines):
        return None
    openings = list(LONG_OPENING.finditer(lines[start]))
    if not openings:
        return None
    level = len(openings[-1].group(1))
    compiles = compiler()
    for candidate, line in _candidates(lines, start, level):
        if compiles(candidate):
            return candidate, line
    return None


def _candidates(lines: list[str], start: int, level: int) -> Iterator[tuple[str, int]]:
    closers = [c.replace("]]", "]" + "=" * level + "]", 1) for c in _CLOSERS]
    count = 0
    for i in range(start + 1, len(lines)):
        if not _CODE_LINE.match(lines[i]):
            continue
        head = "\n".join(lines[:i]) + "\n"       # the text keeps its last line's newline
        rest = "\n".join(lines[i:])
        # The whole rest first, then cut after each `end` at column 0 (prose after the plan).
        cuts = [len(rest), *(e.end() for e in _RUN_END.finditer(rest))]
        for closer in closers:
            for cut in cuts:
                count += 1
                if count > _MAX_CANDIDATES:
                    return
                yield f"{head}{closer}\n{rest[:cut]}", i + 1


def compiler() -> Callable[[str], bool]:
    """A Lua 5.4 compile check (`load`, never run) of a plan's text."""
    from agent.plans.sandbox import new_runtime  # lupa is imported only when a plan is repaired

    lua = new_runtime(max_memory=64 * 1024 * 1024)
    load = lua.eval("function(src) return load(src, '=plan', 't', {}) ~= nil end")

    def compiles(text: str) -> bool:
        return bool(load(text.encode("utf-8", errors="surrogateescape")))
    return compiles
