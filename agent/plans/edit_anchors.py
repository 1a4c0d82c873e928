"""GBNF rules for an edit's `old` text: an exact, unique run of whole lines of a file the prompt quoted.

Why: small models copy a method without `self` or re-indented, so `tools.edit` finds no such
text, the plan fails at run time and the repairs that follow tend to loop. A grammar can hold the
copy to the file itself.

The `old` text is a Lua string literal, in any of the three forms a plan writes ('…', "…" with
`\\n` between lines, or a long string [[…]]), of lines i..j of the file, where
- the first line may leave out its indentation;
- the text occurs exactly once in the file (what `tools.edit` needs without replace_all): each start
  goes on at least to the first line that makes it unique, and may stop at any line after that;
- a newline may end the text where the file has one there.
A start that is never unique is left out, and so is any run through a line holding "```" (it would end
the reply's fence) or a file with other control characters than tab.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from agent.plans.gbnf import Rules, alt, lit

__all__ = ["anchored_text", "is_edit_item", "LUA_FORMS", "JSON_FORMS", "MAX_ANCHOR_BYTES", "MAX_ANCHOR_LINES"]

MAX_ANCHOR_BYTES = 24 * 1024  # larger files are not quoted whole in a prompt anyway
MAX_ANCHOR_LINES = 600
_UNIQUE_WITHIN = 12           # lines a start may need before its text is unique; beyond, no start there
_LONG_LEVELS = 4
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _short(quote: str) -> Callable[[str], str]:
    return lambda text: text.replace("\\", "\\\\").replace(quote, "\\" + quote)


def _json(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


# name: (opening, closing, the newline between lines, how a line is written); a long string's level
# is the file's own (see _long_level).
_FORMS: dict[str, tuple[str, str, str, Callable[[str], str] | None]] = {
    "dq": ('"', '"', "\\n", _short('"')),
    "sq": ("'", "'", "\\n", _short("'")),
    "ls": ("[{eq}[", "]{eq}]", "\n", None),
    "json": ('"', '"', "\\n", _json),
}
LUA_FORMS = ("dq", "sq", "ls")
JSON_FORMS = ("json",)


def is_edit_item(schema: object) -> bool:
    """Whether an answer schema's list item is an edit: an object of exactly `path`, `old`, `new`."""
    return (isinstance(schema, dict) and schema.get("type") == "object"
            and list(schema.get("properties") or {}) == ["path", "old", "new"])


def _long_level(text: str) -> int | None:
    for level in range(_LONG_LEVELS + 1):
        if "]" + "=" * level + "]" not in text:
            return level
    return None


def _starts(text: str, lines: list[str]) -> list[tuple[int, bool, int]]:
    """(line i, without its indentation?, the last line j that i..j needs to be unique)."""
    out = []
    for i, line in enumerate(lines):
        if not line.strip() or "```" in line:
            continue
        variants = [False, True] if line != line.lstrip(" \t") else [False]
        for stripped in variants:
            head = line.lstrip(" \t") if stripped else line
            for j in range(i, min(len(lines), i + _UNIQUE_WITHIN)):
                if "```" in lines[j]:
                    break
                if text.count("\n".join([head, *lines[i + 1:j + 1]])) == 1:
                    out.append((i, stripped, j))
                    break
    return out


def anchored_text(g: Rules, key: str, text: str, forms: tuple[str, ...] = LUA_FORMS) -> str | None:
    """The rule for a string literal, in one of `forms` (LUA_FORMS or JSON_FORMS), of a unique run of
    `text`'s lines (see the module's doc), its rule names starting with `key`; None when the file has
    no such run or is not anchorable."""
    if len(text.encode("utf-8")) > MAX_ANCHOR_BYTES or _CONTROL.search(text):
        return None
    lines = text.split("\n")
    if len(lines) > MAX_ANCHOR_LINES:
        return None
    starts = _starts(text, lines)
    if not starts:
        return None
    out = []
    level = _long_level(text)
    for tag in forms:
        opener, closer, newline, encode = _FORMS[tag]
        if encode is None:           # a long string
            if level is None:
                continue
            opener, closer = opener.format(eq="=" * level), closer.format(eq="=" * level)
        rule = _one_form(g, f"{key}-{tag}", lines, starts, opener, closer, newline, encode)
        if rule is not None:
            out.append(rule)
    return g.add(key, " | ".join(out)) if out else None


def _one_form(g: Rules, base: str, lines: list[str], starts: list[tuple[int, bool, int]], opener: str,
              closer: str, newline: str, encode: Callable[[str], str] | None) -> str | None:
    def enc(s: str) -> str:
        return lit(encode(s) if encode else s)

    nl, close = lit(newline), lit(closer)
    dead: set[int] = set()   # lines a run cannot end at or go through in this form
    for m in reversed(range(len(lines))):
        alts = []
        if encode or not lines[m].endswith(closer[:-1]):
            alts.append(close)   # [[…x]]] would close one character early: then only after a newline
        if m < len(lines) - 1:   # the file has a newline after line m
            alts.append(f"{nl} {close}")
            if "```" not in lines[m + 1] and m + 1 not in dead:
                alts.append(f"{nl} {enc(lines[m + 1])} {base}-a{m + 1}")
        if not alts:
            dead.add(m)
            continue
        g.add(f"{base}-a{m}", " | ".join(alts))
    heads = []
    for i, stripped, j in starts:
        if j in dead:
            continue
        first = lines[i].lstrip(" \t") if stripped else lines[i]
        parts = [enc(first), *(f"{nl} {enc(lines[k])}" for k in range(i + 1, j + 1)), f"{base}-a{j}"]
        heads.append(g.add(f"{base}-s{i}{'i' if stripped else ''}", " ".join(parts)))
    if not heads:
        return None
    # Lua drops a newline right after a long string's opening bracket.
    open_rule = lit(opener) if encode else f'{lit(opener)} "\\n"?'
    return g.add(base, f"{open_rule} {alt(heads)}")
