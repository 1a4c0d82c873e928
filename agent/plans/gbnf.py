"""GBNF text: literals, character classes and a rule set, for the grammars llama.cpp's server takes."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable, Sequence

__all__ = ["Rules", "lit", "char_class", "alt", "members_in_order"]


def lit(text: str) -> str:
    """A GBNF string literal."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _class_char(ch: str) -> str:
    if ch.isascii() and ch.isalnum():
        return ch
    return f"\\x{ord(ch):02X}" if ord(ch) <= 0xFF else f"\\u{ord(ch):04X}"


def char_class(chars: Iterable[str], negate: bool = False) -> str:
    """A GBNF character class; every non-alphanumeric character as \\xHH (llama.cpp knows few escapes)."""
    codes = sorted({ord(c) for c in chars})
    parts: list[str] = []
    i = 0
    while i < len(codes):
        j = i
        while j + 1 < len(codes) and codes[j + 1] == codes[j] + 1:
            j += 1
        lo, hi = chr(codes[i]), chr(codes[j])
        if j - i >= 2:
            parts.append(f"{_class_char(lo)}-{_class_char(hi)}")
        else:
            parts.extend(_class_char(chr(c)) for c in codes[i:j + 1])
        i = j + 1
    return "[" + ("^" if negate else "") + "".join(parts) + "]"


def alt(options: Sequence[str]) -> str:
    return options[0] if len(options) == 1 else "(" + " | ".join(options) + ")"


class Rules:
    """Named GBNF rules in insertion order."""

    def __init__(self) -> None:
        self._rules: dict[str, str] = {}

    def add(self, name: str, body: str) -> str:
        if self._rules.get(name, body) != body:
            raise ValueError(f"grammar rule {name} defined twice")
        self._rules[name] = body
        return name

    def fresh(self, base: str) -> str:
        """An unused rule name starting with `base` (letters, digits and dashes only)."""
        base = re.sub(r"[^A-Za-z0-9]+", "-", base).strip("-").lower() or "r"
        name, n = base, 2
        while name in self._rules:
            name, n = f"{base}-{n}", n + 1
        return name

    def text(self) -> str:
        return "\n".join(f"{name} ::= {body}" for name, body in self._rules.items()) + "\n"


def members_in_order(g: Rules, base: str, items: Sequence[str], keys: Sequence[str], required: Collection[str],
                     sep: str, trailing: str | None = None) -> str:
    """Alternatives (text, not a rule) for one or more object members in the given order: each
    required key present, optional ones skippable, `sep` between two, `trailing` allowed after the
    last once no required key is left. `items[i]` is the member rule of `keys[i]`; the rules for
    what may follow position i are `{base}-r{i}`. A fixed order keeps the grammar small and the
    sampler on one path (the plan grammar's answer tables; the JSON answer grammar's objects)."""

    def nexts(i: int) -> list[int]:
        """Keys that may come at position i: up to and including the next required one."""
        out = []
        for j in range(i, len(keys)):
            out.append(j)
            if keys[j] in required:
                break
        return out

    @functools.cache
    def rest(i: int) -> str:                 # the keys from i on, after at least one key
        alts = [f"{sep} {items[j]} {rest(j + 1)}" for j in nexts(i)]
        if not set(required) & set(keys[i:]):
            alts += ['""', *([trailing] if trailing else [])]
        return g.add(f"{base}-r{i}", " | ".join(alts))

    return " | ".join(f"{items[j]} {rest(j + 1)}" for j in nexts(0))
