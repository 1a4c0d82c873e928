"""Fenced blocks in a model's reply: the one reader every part of the agent uses.

Two readings, because replies carry two kinds of payload:

* `blocks`: a reply that carries one chunk (a Lua plan, a JSON answer, a skill and its test).
  Loose on purpose: a fence may open after text on the same line and close anywhere, even at the
  end of a code line (small models write `end```), and with `open_last` a last fence the reply
  never closed runs to its end (a reply cut at its token limit).
* `file_blocks`: a reply that carries whole files. Strict: a fence closes only on a line of its
  own, with the same backticks (or tildes) and indentation it opened with, so a file that holds a
  fence of its own (a README, a docstring with an example) is read whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Block", "blocks", "file_blocks"]

_LOOSE = re.compile(r"```[ \t]*([^\n`]*)\n(.*?)```", re.S)
_LOOSE_OPEN_LAST = re.compile(r"```[ \t]*([^\n`]*)\n(.*?)(?:```|\Z)", re.S)
_STRICT = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)"
                     r"^(?P=indent)(?P=ticks)[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    info: str   # the fence's info string, stripped: "python", "lua", "python calc.py", ""
    body: str   # the text between the fences, as written
    start: int  # where the opening fence begins in the reply
    end: int    # just after the closing fence (the reply's end for an unclosed last block)

    @property
    def lang(self) -> str:
        """The info string's first word, lower case ("" for a bare fence)."""
        words = self.info.split()
        return words[0].lower() if words else ""


def blocks(text: str, *, open_last: bool = False) -> list[Block]:
    """The reply's fenced blocks, read loosely (see the module's note)."""
    pattern = _LOOSE_OPEN_LAST if open_last else _LOOSE
    return [Block(m.group(1).strip(), m.group(2), m.start(), m.end()) for m in pattern.finditer(text)]


def file_blocks(text: str) -> list[Block]:
    """The reply's fenced blocks, read strictly (see the module's note)."""
    return [Block(m.group("info").strip(), m.group("body"), m.start(), m.end()) for m in _STRICT.finditer(text)]
