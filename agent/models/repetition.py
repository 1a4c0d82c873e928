"""Spot a streamed answer that has fallen into a loop: its end is one block of text over and over.

Measured (Qwen2.5-Coder-0.5B under real lorch, feature-cart, held to the plan grammar, runs gram6
and gram9): the builder's plan wrote a test file and, a few asserts in, repeated the same two or
three lines to its 3,072-token limit: 264 s of a 307 s command spent on copies. The loop is exact —
the same characters each time — so it shows as a tail of the text with a short period.

The same model also counts while it loops (run gram10, fix-temperature: "# Example 24: …",
"# Example 25: …", … to the limit, twice, 285 s and 249 s). So a second, stricter look reads every
run of digits as one and the same digit: a tail of many more copies (`MIN_COUNTED_COPIES`, at least
`MIN_COUNTED_CHARS`) that differ only in their numbers is a loop too.

Two more shapes (run gram16): a review plan that repeated one 464-character `for` block until its
token limit, never reaching six copies, and an edit whose new text was `"Fizz", ` a thousand times
on one line. So three exact copies of a block of `MIN_BLOCK_PERIOD`+ characters are a loop, and so
is a short pattern along one line once it runs 1,500 characters. Replayed over the 1,358 distinct
replies recorded in real-model runs so far, these rules stop 22 replies sooner or at all, every one
a loop, and no other.

One more shape is no loop by these rules but is as empty (run gram30, feature-cart): a test file's
long string never closed, and the 0.5B went on to recite the system prompt's tool list, 1,786
characters a copy, to its 3,072-token limit (556 s). So the watch, given the request's system
message, also stops a reply whose last `ECHO_CHARS` characters stand word for word in it: no plan,
file or answer copies that much of the agent's own instructions.

`repeating_tail(text)` finds such a tail; `RepetitionWatch` runs it over a growing stream now and
then, so that the client can stop reading (the server stops generating when the connection closes)
after a handful of copies instead of after the token limit. Code that merely looks alike (a row of
asserts with different calls or strings, a short table of numbers) is never cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Loop", "repeating_tail", "RepetitionWatch", "ECHO_CHARS", "MIN_COPIES", "MIN_LOOP_CHARS", "MIN_COUNTED_COPIES",
           "MIN_COUNTED_CHARS"]

MIN_COPIES = 6          # copies of the block at the end of the text
MIN_LOOP_CHARS = 480    # and at least this much text in them: a short repeated line is no loop
MIN_COUNTED_COPIES = 16     # copies that differ only in their numbers: many more, since a test's
MIN_COUNTED_CHARS = 1200    # rows of `f(1) == 1`, `f(2) == 4` look alike too
_DIGITS = re.compile(r"[0-9]+")
_COUNTED_LETTERS = 8        # a counted block has words in it ("Example", "assertEqual"), not only numbers
_MIN_PERIOD = 12        # `0, 0, 0, ...` or a row of `=` is data, not a loop ...
_MIN_SHORT_LOOP_CHARS = 600   # ... unless the short block holds a line break and runs this long,
_MIN_ONE_LINE_LOOP_CHARS = 1500  # or runs this long on one line (`"Fizz", ` 1,000 times: run gram16)
MIN_BLOCK_COPIES = 3    # a long block (whole statements) needs fewer copies: three exact copies
MIN_BLOCK_PERIOD = 400  # of 400+ characters are no coincidence (a review plan's `for` block, gram16)
_MAX_PERIOD = 1600      # a block longer than this repeated six times would fill any plan budget
_PROBE = 32             # the end of the text, looked for earlier on to find candidate periods
_CHECK_EVERY = 256      # characters of new text between two looks
ECHO_CHARS = 400        # the reply's end found this long in the system message: it recites the instructions


@dataclass(frozen=True)
class Loop:
    """The text's end is `copies` (or more) copies of a `period`-character block from `start` on;
    the text up to `first_copy_end` holds the block once. With `counted`, copies differ in their
    numbers (positions are the text's own; `period` is the block's length with each number as one
    digit)."""

    start: int
    first_copy_end: int
    period: int
    copies: int
    counted: bool = False


def repeating_tail(text: str) -> Loop | None:
    """The loop the text ends in, exact or counted (see the module), or None."""
    exact = (_periodic_tail(text, MIN_COPIES, MIN_LOOP_CHARS)
             or _periodic_tail(text, MIN_BLOCK_COPIES, MIN_BLOCK_COPIES * MIN_BLOCK_PERIOD, MIN_BLOCK_PERIOD))
    if exact is not None:
        return exact
    if len(text) < MIN_COUNTED_CHARS:
        return None
    folded, where = _fold_digits(text)
    counted = _periodic_tail(folded, MIN_COUNTED_COPIES, MIN_COUNTED_CHARS)
    if counted is None or _letters(folded[counted.start:counted.first_copy_end]) < _COUNTED_LETTERS:
        return None   # rows of numbers (a table, a CSV file) are data, however many
    return Loop(where[counted.start], where[counted.first_copy_end], counted.period, counted.copies, counted=True)


def _letters(text: str) -> int:
    return sum(c.isalpha() for c in text)


def _fold_digits(text: str) -> tuple[str, list[int]]:
    """`text` with every run of digits as "0", and for each of its characters where it was in
    `text` (plus the end)."""
    parts: list[str] = []
    where: list[int] = []
    last = 0
    for m in _DIGITS.finditer(text):
        parts.append(text[last:m.start()])
        where.extend(range(last, m.start()))
        parts.append("0")
        where.append(m.start())
        last = m.end()
    parts.append(text[last:])
    where.extend(range(last, len(text) + 1))
    return "".join(parts), where


def _periodic_tail(text: str, min_copies: int, min_chars: int, min_period: int = 1) -> Loop | None:
    """The exact loop the text ends in, or None. The shortest period (of at least `min_period`)
    wins; the repeating part is followed back as far as it goes (the first copy may begin
    mid-block: any rotation repeats)."""
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
        if (period >= min_period and text[n - span:n - period] == text[n - span + period:]
                and not (min_period > 1 and _has_shorter_period(text[n - period:]))):
            start = n - span
            while start > 0 and text[start - 1] == text[start - 1 + period]:
                start -= 1
            if period < _MIN_PERIOD and n - start < (_MIN_SHORT_LOOP_CHARS if "\n" in text[n - period:]
                                                     else _MIN_ONE_LINE_LOOP_CHARS):
                # A short run of one short pattern on a line (`0, 0, 0`, `=====`) is data; over many
                # lines (`} ` alone on 1,300 lines: the 0.5B, run gram13, to its token limit) or
                # along one line for 1,500 characters, a loop.
                return None
            return Loop(start, start + period, period, (n - start) // period)
        pos = text.rfind(probe, floor, pos + _PROBE - 1)
    return None


def _has_shorter_period(block: str) -> bool:
    """Whether `block` is itself copies of a shorter block (then the short-period rules decide)."""
    return (block + block).find(block, 1) < len(block)


class RepetitionWatch:
    """Looks at a growing text every `_CHECK_EVERY` characters; `loop` is set once it repeats.

    `due(chars)` is cheap (a comparison), so the caller joins its text only when a look is due."""

    def __init__(self, echo_of: str = "") -> None:
        self.loop: Loop | None = None
        self.echoed = False                 # the text's end recites `echo_of` (the system message)
        self._echo_of = echo_of
        self._next_check = min(MIN_LOOP_CHARS, ECHO_CHARS)

    def due(self, chars: int) -> bool:
        return self.loop is None and not self.echoed and chars >= self._next_check

    def update(self, text: str) -> Loop | None:
        if self.due(len(text)):
            self._next_check = len(text) + _CHECK_EVERY
            self.loop = repeating_tail(text)
            self.echoed = self.loop is None and len(text) >= ECHO_CHARS and text[-ECHO_CHARS:] in self._echo_of
        return self.loop

    @property
    def stopped(self) -> bool:
        return self.loop is not None or self.echoed
