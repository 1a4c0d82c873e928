"""One glob dialect for paths: `*` and `?` within a component, `**` across, `[...]` classes.

Used by the plan tools (`glob`, `grep` globs) and the skill path rules, so both read a pattern
the same way.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["glob_regex"]


@cache
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob with `**` into a regex over POSIX relative paths."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and "]" in pattern[i + 2:] or ch == "[" and pattern[i + 1:i + 2] == "]":
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out) + r"\Z")
