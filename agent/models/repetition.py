"""Spot a streamed answer that has fallen into a loop: its end is one block of text over and over.

Why: a small model may repeat the same few lines to its token limit, spending most of a command's
time on copies. The loop is exact — the same characters each time — so it shows as a tail of the
text with a short period.

A short pattern may run along one line: it is a loop once it runs 1,500 characters. Checked
against recorded real-model replies, these rules stop only loops.

`repeating_tail(text)` finds such a tail; `RepetitionWatch` runs it over a growing stream now and
then, so that the client can stop reading (the server stops generating when the connection closes)
after a handful of copies instead of after the token limit. Code that merely looks alike (a row of
asserts with different calls or strings, a short table of numbers) is never cut.

Data repeats by nature (a table of one row, a fixture, generated lines), and inside a file the
reply is still writing, repetition alone says nothing about whether the file will end: so a loop
whose copies all sit inside an open file body (a fenced block, or a Lua long string `[==[ … ]==]`)
is let run until its copies fill half the reply's token budget (about `CHARS_PER_TOKEN` characters
a token). A file that repeats that much that close to the limit would be cut off anyway. Copies
with words or a call in them (code: `.replace(":", "")` over and over) are let
run only `FILE_LOOP_CHARS`: no hand-written module repeats a block of code that long, and on one CPU thread
a small model writes a few tokens a second, so a loop let run to half its budget spends most of
the command's deadline. Repetition in the reply's own words is stopped as soon as it is seen. The watch reads each new piece of the
stream once and looks at a bounded window of its end, spacing its looks as the window fills, so a
reply costs time in proportion to its size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Loop", "repeating_tail", "RepetitionWatch", "MIN_COPIES", "MIN_LOOP_CHARS", "FILE_LOOP_CHARS"]

MIN_COPIES = 6          # copies of the block at the end of the text
MIN_LOOP_CHARS = 480    # and at least this much text in them: a short repeated line is no loop
_CODE_LETTERS = 8       # a block of code has words in it ("return", "assertEqual"), not only numbers
_MIN_PERIOD = 12        # `0, 0, 0, ...` or a row of `=` is data, not a loop ...
_MIN_SHORT_LOOP_CHARS = 600   # ... unless the short block holds a line break and runs this long,
_MIN_ONE_LINE_LOOP_CHARS = 1500  # or runs this long on one line (`"Fizz", ` 1,000 times)
_MAX_PERIOD = 1600      # a block longer than this repeated six times would fill any plan budget
_PROBE = 32             # the end of the text, looked for earlier on to find candidate periods
_CHECK_EVERY = 256      # characters of new text between two looks, at least
WINDOW = 32 * 1024      # the end of the text a look reads: enough for any loop these rules can find
_LOOKS_PER_WINDOW = 8   # a full window is looked at every WINDOW / 8 characters: linear in the reply
CHARS_PER_TOKEN = 4     # for the budget a loop inside a file may fill (a low guess stops loops sooner)
FILE_LOOP_CHARS = 1000  # copies of a block of code inside a file: about 250 tokens, minutes on one thread
_CALL = re.compile(r"[A-Za-z_]\w*\s*\(")  # a name called: code, however few letters the copy holds


@dataclass(frozen=True)
class Loop:
    """The text's end is `copies` (or more) copies of a `period`-character block from `start` on;
    the text up to `first_copy_end` holds the block once."""

    start: int
    first_copy_end: int
    period: int
    copies: int


def repeating_tail(text: str) -> Loop | None:
    """The exact loop the text ends in, or None. The shortest period wins; the repeating part is
    followed back as far as it goes (the first copy may begin mid-block: any rotation repeats)."""
    n = len(text)
    if n < max(MIN_LOOP_CHARS, _PROBE + _MIN_PERIOD):
        return None
    probe = text[n - _PROBE:]
    floor = max(0, n - _PROBE - _MAX_PERIOD)
    pos = text.rfind(probe, floor, n - 1)
    while pos >= 0:
        period = n - _PROBE - pos
        span = max(MIN_COPIES * period, MIN_LOOP_CHARS)
        if span > n:
            return None       # longer periods need even more text
        if text[n - span:n - period] == text[n - span + period:]:
            start = n - span
            while start >= period and text[start - period:start] == text[start:start + period]:
                start -= period  # whole copies back at C speed, then the part of one copy
            while start > 0 and text[start - 1] == text[start - 1 + period]:
                start -= 1
            if period < _MIN_PERIOD and n - start < (_MIN_SHORT_LOOP_CHARS if "\n" in text[n - period:]
                                                     else _MIN_ONE_LINE_LOOP_CHARS):
                # A short run of one short pattern on a line (`0, 0, 0`, `=====`) is data; over many
                # lines (`} ` alone on line after line, to the token limit) or
                # along one line for 1,500 characters, a loop.
                return None
            return Loop(start, start + period, period, (n - start) // period)
        pos = text.rfind(probe, floor, pos + _PROBE - 1)
    return None


def _is_code(block: str) -> bool:
    """Whether a repeated block is code rather than data: it has words, or calls a name (the block
    twice over holds every rotation's call whole)."""
    return sum(c.isalpha() for c in block) >= _CODE_LETTERS or _CALL.search(block + block) is not None


_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_LONG_BRACKET = re.compile(r"\[(=*)\[|\](=*)\]")


class _FileBodies:
    """Follows, line by line as the text arrives, whether it is inside a file body: a fenced block
    or a Lua long string. `open_since` is where the open body's text began, or None."""

    def __init__(self) -> None:
        self.open_since: int | None = None
        self._fence: str | None = None     # the open fence's ticks
        self._level: str | None = None     # the open long string's `=`s
        self._line: list[str] = []
        self._line_start = 0

    def feed(self, piece: str, at: int) -> None:
        """`piece` is the text from offset `at` on."""
        start = 0
        while (cut := piece.find("\n", start)) >= 0:
            self._line.append(piece[start:cut])
            self._end_line("".join(self._line), at + cut + 1)
            self._line = []
            self._line_start = at + cut + 1
            start = cut + 1
        if start < len(piece):
            self._line.append(piece[start:])

    def _end_line(self, line: str, next_line_at: int) -> None:
        fence = _FENCE_LINE.match(line)
        if self._fence is not None:
            if fence and fence.group(1)[0] == self._fence[0] and len(fence.group(1)) >= len(self._fence) \
                    and not line.strip()[len(fence.group(1)):]:
                self._fence, self.open_since = None, None
            return
        if self._level is None and fence:
            self._fence, self.open_since = fence.group(1), next_line_at
            return
        for m in _LONG_BRACKET.finditer(line):
            if self._level is None and m.group(1) is not None:
                self._level, self.open_since = m.group(1), self._line_start + m.end()
            elif self._level is not None and m.group(2) == self._level:
                self._level, self.open_since = None, None


class RepetitionWatch:
    """Fed the stream's new text piece by piece; looks at the end of it now and then, and sets
    `loop` once the reply's own words repeat (see the module: not the content of an open file)."""

    def __init__(self, max_tokens: int = 0) -> None:
        self.loop: Loop | None = None
        # How much of a file a loop may fill before it counts (no budget: a file is never judged).
        self._body_loop_chars = max_tokens * CHARS_PER_TOKEN // 2 if max_tokens > 0 else None
        self._file_loop_from: int | None = None
        self.chars = 0
        self._next_check = MIN_LOOP_CHARS
        self._tail: list[str] = []
        self._bodies = _FileBodies()

    def feed(self, piece: str) -> Loop | None:
        if not piece or self.loop is not None:
            return self.loop
        self._bodies.feed(piece, self.chars)
        self.chars += len(piece)
        self._tail.append(piece)
        if self.chars >= self._next_check:
            self._look()
        return self.loop

    def _look(self) -> None:
        text = "".join(self._tail)
        if len(text) > WINDOW:
            text = text[-WINDOW:]
        self._tail = [text]
        self._next_check = self.chars + max(_CHECK_EVERY, len(text) // _LOOKS_PER_WINDOW)
        loop = repeating_tail(text)
        if loop is not None:
            offset = self.chars - len(text)
            loop = Loop(loop.start + offset, loop.first_copy_end + offset, loop.period, loop.copies)
            body = self._bodies.open_since
            if body is None or loop.first_copy_end <= body:  # (any rotation repeats: the copies may
                self.loop = loop                              # reach back into the fence's line)
                return
            # Inside a file: followed from look to look (a long run outgrows the window).
            if self._file_loop_from is None or self._file_loop_from < body:
                self._file_loop_from = loop.start
            if self._body_loop_chars is None:
                return
            block = text[loop.start - offset:loop.first_copy_end - offset]
            allowed = (min(self._body_loop_chars, FILE_LOOP_CHARS) if _is_code(block)
                       else self._body_loop_chars)
            if self.chars - self._file_loop_from >= allowed:
                self.loop = loop
            return
        self._file_loop_from = None
