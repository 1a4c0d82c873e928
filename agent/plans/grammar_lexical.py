"""The plan grammar's tokens: names, strings, numbers, comments and whitespace.

Everything here guards how text lexes in Lua 5.4 inside a ```lua fence: keywords are never names,
`--` never starts by accident, `[[` never opens by accident, and no string or comment holds "```".
Names a plan must not use (reserved) are left out of the `name` rule as a trie, which keeps the
grammar deterministic for the sampler.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.plans.gbnf import Rules
from agent.plans.gbnf import char_class as _cls
from agent.plans.gbnf import lit as _lit
from agent.plans.lint import KEYWORDS

__all__ = ["lexical_rules"]

_LONG_LEVELS = 4      # long strings [[...]] up to [====[...]====]
_FENCE = "`"


_ID_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_ID_CHAR = _ID_START | frozenset("0123456789")


def _names(g: Rules, rule: str, excluded: frozenset[str]) -> None:
    """`rule`: Lua identifiers except `excluded`, as a trie of rules (deterministic for the sampler)."""

    def node(prefix: str) -> str:
        name = rule if not prefix else f"{rule}-x-{prefix.replace('_', '-').lower()}-{_case_tag(prefix)}"
        allowed = _ID_START if not prefix else _ID_CHAR
        children = sorted({w[len(prefix)] for w in excluded if w.startswith(prefix) and len(w) > len(prefix)})
        alts = [f"{_lit(c)} {node(prefix + c)}" for c in children]
        rest = sorted(allowed - set(children))
        alts.append(f"{_cls(rest)} idtail")
        if prefix and prefix not in excluded:
            alts.append('""')
        return g.add(name, " | ".join(alts))

    node("")


def _case_tag(prefix: str) -> str:
    """Distinguishes rule names of prefixes that differ only in case or `_` vs `-` (e.g. _G / _g)."""
    return "".join("u" if c.isupper() else ("s" if c == "_" else "l") for c in prefix)


def _no_fence_text(g: Rules, base: str, excluded: str, extra: Sequence[str], end: str) -> str:
    """Text of any characters but `excluded`, and `extra` items, closed by `end`, never holding
    three backticks in a row ("```" would end the ```lua fence early). States: the backtick run."""
    runs = [f"{base}-b{i}" for i in range(3)]
    for i, rule in enumerate(runs):
        alts = [end, f"{_cls(set(excluded) | {_FENCE}, negate=True)} {runs[0]}"]
        alts += [f"{x} {runs[0]}" for x in extra]
        if i < 2:
            alts.append(f"{_lit(_FENCE)} {runs[i + 1]}")
        g.add(rule, " | ".join(alts))
    return runs[0]


def _long_string(g: Rules, level: int) -> str:
    """`[==[ ... ]==]`: any text (newlines, quotes, backslashes) up to the first closing bracket.

    States: how much of the closing bracket `]` `=`*level `]` the text ends with (k = 0..level+1,
    `]` then k-1 `=`), times the backtick run (0..2). The text may not end right after `]` and all
    the `=` of the level, since the closing bracket would then close one character early.
    """
    eq = "=" * level
    close = "]" + eq + "]"
    full = level + 1                      # state: `]` plus every `=` seen; `]` now would close

    def state(k: int, b: int) -> str:
        return f"ls{level}-k{k}-b{b}"

    # Reachable states: (0, b) after b backticks, (k, 0) inside a possible closing bracket.
    for k, b in [(0, 0), (0, 1), (0, 2), *((k, 0) for k in range(1, full + 1))]:
        alts = [] if k == full else [_lit(close)]
        alts.append(f"{_cls(']=' + _FENCE, negate=True)} {state(0, 0)}")
        if b < 2:
            alts.append(f"{_lit(_FENCE)} {state(0, b + 1)}")
        if k != full:
            alts.append(f"{_lit(']')} {state(1, 0)}")
        alts.append(f"{_lit('=')} {state(k + 1 if 1 <= k < full else 0, 0)}")
        g.add(state(k, b), " | ".join(alts))
    return g.add(f"lstr{level}", f"{_lit('[' + eq + '[')} {state(0, 0)}")


def lexical_rules(g: Rules, name_excluded: frozenset[str]) -> None:
    """The token rules; `name` (a variable) is none of `name_excluded`."""
    # One line; not `--[` (a long comment), no backtick (no "```"), no "\r" (Lua ends a comment
    # there too, and the rest would escape into code). A comment follows a whitespace character,
    # so `a - --x` never becomes `a ---x`.
    first, rest = _cls("\n\r`[", negate=True), _cls("\n\r`", negate=True)
    g.add("comment", f'"--" ({first} {rest}*)? "\\n"')
    g.add("wsp", "[ \\t\\n]*")
    g.add("ws", "wsp ([ \\t\\n] comment wsp)*")
    g.add("sp", "[ \\t\\n] comment? ws")
    g.add("idtail", "[a-zA-Z0-9_]*")
    _names(g, "name", name_excluded)
    _names(g, "ident", frozenset(KEYWORDS))
    g.add("num", '[0-9]+ ("." [0-9]+)? ([eE] [+\\x2D]? [0-9]+)? | "0" [xX] [0-9a-fA-F]+')
    escape = ('"\\\\" ([abfnrtv] | "\\\\" | "\\"" | "\'" | "x" [0-9a-fA-F]{2} | [01] [0-9] [0-9] | '
              '"2" [0-4] [0-9] | "25" [0-5] | "u{" [0-9a-fA-F]{1,6} "}")')
    g.add("esc", escape)
    dq = _no_fence_text(g, "dq", '"\\\n\r', ["esc"], _lit('"'))
    sq = _no_fence_text(g, "sq", "'\\\n\r", ["esc"], _lit("'"))
    g.add("sstr", f'"\\"" {dq} | "\'" {sq}')
    g.add("lstr", " | ".join(_long_string(g, level) for level in range(_LONG_LEVELS + 1)))
