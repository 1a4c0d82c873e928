"""Files written as Lua long strings: `tools.write("path", [==[ <the whole file> ]==])`.

A Lua long string is the one container in which code needs no escaping at all: no quote, backslash
or newline inside it means anything until its own closing bracket. The builder may ask for its files
so (`--answers lua`), and this module reads them back out of the reply without running it: the
calls are the whole plan, and reading them needs no interpreter.
"""

from __future__ import annotations

import re

from agent.answering.fenced_files import FencedFile, prose_of

__all__ = ["LUA_RULES", "LUA_EXAMPLE", "lua_files_in_reply", "open_lua_file", "closed_lua", "lua_prose", "write_opening"]

LUA_RULES = ("Answer with Lua that writes every file you change or create, and no other: for each file, "
             "tools.write(\"path/to/file.py\", [==[ on a line of its own, then the whole new content of the file "
             "exactly as it is (no escaping: a long string takes any text), then ]==]) on a line of its own. Give "
             "each file complete, from its first line to its last: never leave parts out or write \"rest unchanged\". "
             "Say nothing else.")
# Shown once, in the system message: at the end of each prompt a small model may copy its path.
LUA_EXAMPLE = "For example:\ntools.write(\"calc.py\", [==[\ndef add(a, b):\n    return a + b\n]==])"

# `tools.write("path", [==[` (any level of `=`: the text decides which closing bracket it cannot hold)
_WRITE = re.compile(r"""\btools\s*\.\s*write\s*\(\s*"([^"\n]{1,300})"\s*,\s*\[(=*)\[""")


def write_opening(path: str) -> str:
    """The text a reply writing `path` begins with."""
    return f'tools.write("{path}", [==[\n'


def _writes(reply: str) -> tuple[list[tuple[int, int, str, str]], re.Match[str] | None]:
    """The closed writes as (start, end, path, content), and the write left open (cut off), if any."""
    found: list[tuple[int, int, str, str]] = []
    pos = 0
    while (m := _WRITE.search(reply, pos)) is not None:
        start = m.end()
        start += 2 if reply.startswith("\r\n", start) else 1 if reply.startswith("\n", start) else 0  # as Lua does
        end = reply.find("]" + m.group(2) + "]", start)
        if end < 0:
            return found, m
        found.append((m.start(), end + len(m.group(2)) + 2, m.group(1).strip().removeprefix("./"), reply[start:end]))
        pos = end
    return found, None


def lua_files_in_reply(reply: str, known: set[str], sources: dict[str, str] | None = None) -> list[FencedFile]:
    """The files a reply writes, in order; a path written twice keeps its last content."""
    found, _ = _writes(reply)
    out: dict[str, FencedFile] = {}
    for _, _, path, content in found:
        out.pop(path, None)
        out[path] = FencedFile(path, content, "lua")
    return list(out.values())


def open_lua_file(reply: str, known: set[str]) -> str | None:
    """The path of the write a reply began and never closed, None when none is left open."""
    _, left_open = _writes(reply)
    return None if left_open is None else left_open.group(1).strip().removeprefix("./")


def closed_lua(reply: str) -> str:
    """`reply` with the write it left open closed (cut at a stop string that took its close)."""
    _, left_open = _writes(reply)
    return reply if left_open is None else reply + "\n]" + left_open.group(2) + "])\n"


def lua_prose(reply: str) -> str:
    """The reply's words outside its writes (and outside any fenced block), as one line."""
    found, _ = _writes(reply)
    for start, end, _, _ in reversed(found):
        reply = reply[:start] + reply[end:].removeprefix(")")
    return prose_of(reply)
