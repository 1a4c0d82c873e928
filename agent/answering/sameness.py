"""Telling a reply that repeats from one that moves on: a loop within one reply, the same reply
again, the same error again (which decides when the answer loop changes course)."""

from __future__ import annotations

import re
import zlib

from agent.models.repetition import repeating_tail

__all__ = ["looping", "same_text", "same_error_key"]

_LOOP_MIN_CHARS = 2000
_LOOP_RATIO = 0.1


def looping(text: str) -> bool:
    """A reply that ends in copies of one block (what the stream watch stops), or a long reply that
    is mostly one thing over and over (SmolLM2-135M: 8,200 characters that compress to 3%; real
    code and JSON answers compress to 20-30%)."""
    if repeating_tail(text) is not None:
        return True
    if len(text) < _LOOP_MIN_CHARS:
        return False
    raw = text.encode("utf-8", "replace")
    return len(zlib.compress(raw, 1)) < _LOOP_RATIO * len(raw)


def same_text(text: str) -> str:
    """The reply as compared with earlier ones: whitespace does not make it another answer."""
    return " ".join(text.split())


_LINE_NUMBER = re.compile(r"\bline \d+\b")


def same_error_key(message: str) -> str:
    """An error as compared with earlier ones: the same failure at another line is the same failure
    (a model's edit of the same absent text reported at line 12, then 10)."""
    return _LINE_NUMBER.sub("line N", message)
