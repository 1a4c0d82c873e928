"""Spot a streamed answer that has fallen into a loop: its end is one block of text over and over.

Measured (Qwen2.5-Coder-0.5B under real lorch, feature-cart, held to the plan grammar, runs gram6
and gram9): the builder's plan wrote a test file and, a few asserts in, repeated the same two or
three lines to its 3,072-token limit: 264 s of a 307 s command spent on copies. The loop is exact —
the same characters each time — so it shows as a tail of the text with a short period.

`repeating_tail(text)` finds such a tail; `RepetitionWatch` runs it over a growing stream now and
then, so that the client can stop reading (the server stops generating when the connection closes)
after a handful of copies instead of after the token limit. Only exact repeats count: code that
merely looks alike (a row of similar asserts, a table of numbers) is never cut.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Loop", "repeating_tail", "RepetitionWatch", "MIN_COPIES", "MIN_LOOP_CHARS"]

MIN_COPIES = 6          # copies of the block at the end of the text
MIN_LOOP_CHARS = 480    # and at least this much text in them: a short repeated line is no loop
_MIN_PERIOD = 12        # `0, 0, 0, ...` or a row of `=` is data, not a loop
_MAX_PERIOD = 1600      # a block longer than this repeated six times would fill any plan budget
_PROBE = 32             # the end of the text, looked for earlier on to find candidate periods
_CHECK_EVERY = 256      # characters of new text between two looks


@dataclass(frozen=True)
class Loop:
    """The text's end is `copies` (or more) copies of a `period`-character block from `start` on."""

    start: int    # where the repeating part begins (the first copy)
    period: int
    copies: int

    @property
    def first_copy_end(self) -> int:
        """Where the first copy ends: the text up to here holds the block once."""
        return self.start + self.period


def repeating_tail(text: str, *, min_copies: int = MIN_COPIES, min_chars: int = MIN_LOOP_CHARS) -> Loop | None:
    """The loop the text ends in, or None. The shortest period wins; the repeating part is followed
    back as far as it goes (the first copy may begin mid-block: any rotation of the block repeats)."""
    n = len(text)
    if n < max(min_chars, _PROBE + _MIN_PERIOD):
        return None
    probe = text[n - _PROBE:]
    floor = max(0, n - _PROBE - _MAX_PERIOD)
    pos = text.rfind(probe, floor, n - 1)
    while pos >= 0:
        period = n - _PROBE - pos
        span = max(min_copies * period, min_chars)
        if span > n:
            return None       # longer periods need even more text
        if text[n - span:n - period] == text[n - span + period:]:
            if period < _MIN_PERIOD:
                return None   # a run of one short pattern (`0, 0, 0`, `=====`): data, not a loop
            start = n - span
            while start > 0 and text[start - 1] == text[start - 1 + period]:
                start -= 1
            return Loop(start, period, (n - start) // period)
        pos = text.rfind(probe, floor, pos + _PROBE - 1)
    return None


class RepetitionWatch:
    """Looks at a growing text every `_CHECK_EVERY` characters; `loop` is set once it repeats.

    `due(chars)` is cheap (a comparison), so the caller joins its text only when a look is due."""

    def __init__(self) -> None:
        self.loop: Loop | None = None
        self._next_check = MIN_LOOP_CHARS

    def due(self, chars: int) -> bool:
        return self.loop is None and chars >= self._next_check

    def update(self, text: str) -> Loop | None:
        if self.due(len(text)):
            self._next_check = len(text) + _CHECK_EVERY
            self.loop = repeating_tail(text)
        return self.loop
