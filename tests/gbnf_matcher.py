"""A small GBNF reader, matcher and random sampler for tests (written for this project).

It reads the GBNF text (not the generator's internals), so it checks what a server would get.
Matching follows llama.cpp's grammar engine: a set of parse stacks advanced one character at a
time, with a rule reference at the end of an alternative replacing its frame (a tail call), so
right recursion runs in constant stack depth. Like llama.cpp, left recursion is an error.

Supported syntax (what llama.cpp documents and `agent/plans/grammar.py` emits): `name ::= ...`
rules, `|`, `( )`, `"literals"` and `[classes]` with `\\xHH \\uHHHH \\t \\n \\r \\\\ \\" \\[ \\]`
escapes, `.`, and the postfix `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`; `#` comments.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

__all__ = ["Grammar", "GrammarError", "parse_gbnf"]


class GrammarError(ValueError):
    """The GBNF text is malformed, refers to an undefined rule, or is left-recursive."""


@dataclass(frozen=True)
class CharSet:
    ranges: tuple[tuple[int, int], ...]
    negated: bool = False

    def matches(self, ch: str) -> bool:
        code = ord(ch)
        inside = any(lo <= code <= hi for lo, hi in self.ranges)
        return inside != self.negated


Element = CharSet | int           # a character set, or a rule index
Alternative = tuple[Element, ...]

_RULE_HEAD = re.compile(r"^([A-Za-z0-9-]+)\s*::=", re.M)
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]"}


def _read_char(text: str, i: int) -> tuple[str, int]:
    if text[i] != "\\":
        return text[i], i + 1
    kind = text[i + 1]
    if kind in "xuU":
        width = {"x": 2, "u": 4, "U": 8}[kind]
        digits = text[i + 2:i + 2 + width]
        if len(digits) != width or not re.fullmatch(r"[0-9a-fA-F]+", digits):
            raise GrammarError(f"bad \\{kind} escape at {text[i:i + 12]!r}")
        return chr(int(digits, 16)), i + 2 + width
    if kind in _ESCAPES:
        return _ESCAPES[kind], i + 2
    raise GrammarError(f"unknown escape \\{kind} (llama.cpp rejects it)")


@dataclass
class Grammar:
    """Compiled rules: `rules[i]` is a list of alternatives; `names` maps rule names to indexes."""

    rules: list[list[Alternative]] = field(default_factory=list)
    names: dict[str, int] = field(default_factory=dict)
    _nodes: dict[tuple[int, int, int, int], int] = field(default_factory=dict)
    _frames: list[tuple[int, int, int, int]] = field(default_factory=list)
    _expanded: dict[int, frozenset[int]] = field(default_factory=dict)
    _stepped: dict[tuple[int, str], frozenset[int]] = field(default_factory=dict)
    _height: list[int] = field(default_factory=list)

    # -- matching (llama.cpp's stacks) ---------------------------------------------------------
    EMPTY = -1

    def _push(self, rule: int, alt: int, idx: int, parent: int) -> int:
        """The stack `(rule, alt, idx)` on top of `parent`; a finished alternative pops (tail call)."""
        if idx == len(self.rules[rule][alt]):
            return parent
        key = (rule, alt, idx, parent)
        node = self._nodes.get(key)
        if node is None:
            node = len(self._frames)
            self._frames.append(key)
            self._nodes[key] = node
        return node

    def _expand(self, stack: int, seen: frozenset[int] = frozenset()) -> frozenset[int]:
        """Stacks reachable without reading, each with a character set on top (EMPTY: accepted)."""
        if stack == self.EMPTY:
            return frozenset({self.EMPTY})
        cached = self._expanded.get(stack)
        if cached is not None:
            return cached
        if stack in seen:
            raise GrammarError("left recursion (a rule reaches itself without reading a character)")
        rule, alt, idx, parent = self._frames[stack]
        element = self.rules[rule][alt][idx]
        if isinstance(element, CharSet):
            out = frozenset({stack})
        else:
            after = self._push(rule, alt, idx + 1, parent)
            found: set[int] = set()
            for a, body in enumerate(self.rules[element]):
                top = self._push(element, a, 0, after) if body else after
                found |= self._expand(top, seen | {stack})
            out = frozenset(found)
        self._expanded[stack] = out
        return out

    def _step(self, stack: int, ch: str) -> frozenset[int]:
        key = (stack, ch)
        cached = self._stepped.get(key)
        if cached is None:
            rule, alt, idx, parent = self._frames[stack]
            element = self.rules[rule][alt][idx]
            assert isinstance(element, CharSet)
            cached = self._expand(self._push(rule, alt, idx + 1, parent)) if element.matches(ch) else frozenset()
            self._stepped[key] = cached
        return cached

    def start(self, rule: str = "root") -> frozenset[int]:
        index = self.names[rule]
        found: set[int] = set()
        for a, body in enumerate(self.rules[index]):
            found |= self._expand(self._push(index, a, 0, self.EMPTY) if body else self.EMPTY)
        return frozenset(found)

    def failure(self, text: str, rule: str = "root") -> int | None:
        """None if `text` matches `rule` entirely, else the offset where matching stopped."""
        stacks = self.start(rule)
        for i, ch in enumerate(text):
            nxt: set[int] = set()
            for stack in stacks:
                if stack != self.EMPTY:
                    nxt |= self._step(stack, ch)
            if not nxt:
                return i
            stacks = frozenset(nxt)
        return None if self.EMPTY in stacks else len(text)

    def accepts(self, text: str, rule: str = "root") -> bool:
        return self.failure(text, rule) is None

    # -- sampling ----------------------------------------------------------------------------
    def _heights(self) -> list[int]:
        """Per rule, the least derivation height: the sampler's way out once deep enough."""
        if self._height:
            return self._height
        inf = 10**9
        height = [inf] * len(self.rules)
        changed = True
        while changed:
            changed = False
            for r, alts in enumerate(self.rules):
                best = min((self._alt_height(a, height) for a in alts), default=inf)
                if best < height[r]:
                    height[r], changed = best, True
        self._height = height
        return height

    @staticmethod
    def _alt_height(alt: Alternative, height: list[int]) -> int:
        return 1 + max((height[e] for e in alt if isinstance(e, int)), default=0)

    def sample(self, rng: random.Random, pool: str, *, rule: str = "root", max_depth: int = 40,
               max_chars: int = 4000) -> str:
        """A random text of the grammar: uniform choices, then the shallowest ones when deep or long."""
        height = self._heights()
        out: list[str] = []
        candidates: dict[CharSet, list[str]] = {}

        def gen(r: int, depth: int) -> None:
            alts = self.rules[r]
            if depth > max_depth or len(out) > max_chars:
                alt = min(alts, key=lambda a: self._alt_height(a, height))
            else:
                alt = rng.choice(alts)
            for element in alt:
                if isinstance(element, int):
                    gen(element, depth + 1)
                else:
                    choices = candidates.get(element)
                    if choices is None:
                        choices = [c for c in pool if element.matches(c)]
                        if not choices and not element.negated:   # e.g. a literal's letter missing from the pool
                            choices = [chr(c) for lo, hi in element.ranges for c in range(lo, min(hi, lo + 64) + 1)]
                        if not choices:
                            raise ValueError(f"no character of the pool matches {element}")
                        candidates[element] = choices
                    out.append(rng.choice(choices))

        gen(self.names[rule], 0)
        return "".join(out)


class _Reader:
    """Recursive-descent reader of GBNF text into a Grammar."""

    def __init__(self, text: str) -> None:
        self.g = Grammar()
        self.pending: dict[str, list[str]] = {}

    def rule_index(self, name: str) -> int:
        if name not in self.g.names:
            self.g.names[name] = len(self.g.rules)
            self.g.rules.append([])
        return self.g.names[name]

    def anonymous(self, alts: list[Alternative]) -> int:
        self.g.rules.append(alts)
        return len(self.g.rules) - 1

    def parse_alternatives(self, text: str, i: int, closing: str | None) -> tuple[list[Alternative], int]:
        alts: list[Alternative] = []
        seq: list[Element] = []
        while True:
            i = _skip_space(text, i)
            if i >= len(text) or (closing and text[i] == closing):
                alts.append(tuple(seq))
                if closing and (i >= len(text) or text[i] != closing):
                    raise GrammarError(f"missing {closing!r}")
                return alts, i + (1 if closing else 0)
            ch = text[i]
            if ch == "|":
                alts.append(tuple(seq))
                seq = []
                i += 1
                continue
            items, i = self.parse_atom(text, i)
            items, i = self.parse_postfix(text, i, items)
            seq.extend(items)

    def parse_atom(self, text: str, i: int) -> tuple[list[Element], int]:
        ch = text[i]
        if ch == '"':
            i += 1
            items: list[Element] = []
            while i < len(text) and text[i] != '"':
                c, i = _read_char(text, i)
                items.append(CharSet(((ord(c), ord(c)),)))
            if i >= len(text):
                raise GrammarError("unterminated literal")
            return items, i + 1
        if ch == "[":
            i += 1
            negated = text[i:i + 1] == "^"
            i += negated
            ranges = []
            while i < len(text) and text[i] != "]":
                lo, i = _read_char(text, i)
                hi = lo
                if text[i] == "-" and text[i + 1] != "]":
                    hi, i = _read_char(text, i + 1)
                ranges.append((ord(lo), ord(hi)))
            if i >= len(text):
                raise GrammarError("unterminated character class")
            return [CharSet(tuple(ranges), negated)], i + 1
        if ch == ".":
            return [CharSet(((0x0A, 0x0A),), negated=True)], i + 1   # llama.cpp: any character but newline
        if ch == "(":
            alts, i = self.parse_alternatives(text, i + 1, ")")
            return [self.anonymous(alts)], i
        m = re.compile(r"[A-Za-z0-9-]+").match(text, i)
        if not m:
            raise GrammarError(f"unexpected {text[i:i + 20]!r}")
        return [self.rule_index(m.group(0))], m.end()

    def parse_postfix(self, text: str, i: int, items: list[Element]) -> tuple[list[Element], int]:
        if i >= len(text):
            return items, i
        op = text[i]
        if op not in "*+?{":
            return items, i
        unit: Element = items[0] if len(items) == 1 else self.anonymous([tuple(items)])
        if op == "{":
            m = re.compile(r"\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}").match(text, i)
            if not m:
                raise GrammarError(f"bad repetition {text[i:i + 12]!r}")
            lo = int(m.group(1))
            hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
            i = m.end()
        else:
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[op]
            i += 1
        return self.repeat(unit, lo, hi), i

    def repeat(self, unit: Element, lo: int, hi: int | None) -> list[Element]:
        out: list[Element] = [unit] * lo
        if hi is None:
            star = self.anonymous([])
            self.g.rules[star] += [(unit, star), ()]
            return out + [star]
        tail: int | None = None
        for _ in range(hi - lo):
            rule = self.anonymous([])
            self.g.rules[rule] += [(unit,) if tail is None else (unit, tail), ()]
            tail = rule
        return out + ([tail] if tail is not None else [])


def _skip_space(text: str, i: int) -> int:
    while i < len(text):
        if text[i] in " \t\r\n":
            i += 1
        elif text[i] == "#":
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
        else:
            break
    return i


def parse_gbnf(text: str) -> Grammar:
    """Compile GBNF text; GrammarError on malformed text or an undefined rule."""
    reader = _Reader(text)
    heads = list(_RULE_HEAD.finditer(text))
    if not heads:
        raise GrammarError("no rules")
    defined = set()
    for n, m in enumerate(heads):
        name = m.group(1)
        if name in defined:
            raise GrammarError(f"rule {name} defined twice")
        defined.add(name)
        body = text[m.end():heads[n + 1].start() if n + 1 < len(heads) else len(text)]
        alts, _ = reader.parse_alternatives(body, 0, None)
        reader.g.rules[reader.rule_index(name)] = alts
    undefined = sorted(set(reader.g.names) - defined)
    if undefined:
        raise GrammarError(f"undefined rule {undefined[0]}")
    if "root" not in defined:
        raise GrammarError("no root rule")
    return reader.g
