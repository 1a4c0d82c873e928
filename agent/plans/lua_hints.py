"""Hints for a plan's Lua error: small models write Python into Lua.

The compiler's message ("unexpected symbol near '['") does not tell a model what to write instead;
these hints name the Lua way, so a repair can succeed. The answer loop adds them to a plan
error's repair message (strategy `lua_hints`).
"""

from __future__ import annotations

import re

from agent.errors import PlanInvalid
from agent.plans.lint import UNKNOWN_GLOBAL, Token, tokenize

__all__ = ["lua_hints"]


_HINT_LIST = ("Lua has no [ ] list literal: write {1, 2} for a list, {a = 1} or {[\"a\"] = 1} for a map "
              "(never [1, 2] or {\"a\": 1}).")
_HINT_COLON = "Lua tables use = between key and value: {a = 1} or {[\"a\"] = 1}, not {\"a\": 1}."
_HINT_PATTERN = ("Lua patterns escape magic characters with %, not with a backslash: %( %) %. %[ %- %+ %%, and "
                 "%d %s %w for classes; for a plain search use string.find(s, text, 1, true).")
_HINT_ERROR_RESULT = ("A tool returns a table {error=..., code=...} instead of its value when it fails: check "
                      "`if type(r) == \"table\" and r.error then ... end` before indexing or concatenating r.")
_PY_WORDS = {
    "None": "Lua's nil is `nil` (and true/false are lower case).",
    "True": "Lua's booleans are `true` and `false`.",
    "False": "Lua's booleans are `true` and `false`.",
    "len": "the length of a string or list is #s (or string.len(s)).",
    "str": "convert with tostring(x).",
    "int": "convert with tonumber(x) (math.floor for an integer).",
    "elif": "Lua writes `elseif`.",
    "def": "functions are `local function name(a, b) ... end`.",
    "import": "there are no imports: use the `tools` table and string/table/math.",
    "open": "read and write files with tools.read(path) and tools.write(path, content).",
    "os": "there is no os: files go through tools.*, and the agent runs the tests itself.",
    "io": "there is no io: read and write files with tools.read / tools.write.",
}
_BACKSLASH_PATTERN = re.compile(r"\\[().\[\]+\-*?^$%dswDSW]")
_PATTERN_FUNCS = frozenset({"find", "match", "gmatch", "gsub"})


def _closing(toks: list[Token], i: int, opening: str, closing: str) -> int:
    """Index of the token closing the bracket opened at i (len(toks) when unbalanced)."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].kind == "op" and toks[j].value == opening:
            depth += 1
        elif toks[j].kind == "op" and toks[j].value == closing:
            depth -= 1
            if depth == 0:
                return j
    return len(toks)


def _python_list_literal(toks: list[Token]) -> bool:
    """A `[` where Lua expects an expression (not `t[k]`, not a `[k] = v` key in a constructor)."""
    for i, tok in enumerate(toks):
        if tok.kind != "op" or tok.value != "[":
            continue
        prev = toks[i - 1] if i else None
        if prev is not None and prev.kind == "op" and prev.value in ("{", ",", ";"):
            end = _closing(toks, i, "[", "]")
            if end + 1 < len(toks) and toks[end + 1].kind == "op" and toks[end + 1].value == "=":
                continue  # {["key"] = value}
            return True
        if prev is None or (prev.kind == "op" and prev.value in ("=", "(", "==", "..")) \
                or (prev.kind == "keyword" and prev.value in ("return", "in", "and", "or", "not")):
            return True
    return False


def _python_dict_literal(toks: list[Token]) -> bool:
    return any(tok.kind == "string" and i + 1 < len(toks) and toks[i + 1].kind == "op" and toks[i + 1].value == ":"
               and i > 0 and toks[i - 1].kind == "op" and toks[i - 1].value in ("{", ",")
               for i, tok in enumerate(toks))


def _backslash_pattern(toks: list[Token]) -> bool:
    """A string argument of string.find/match/gmatch/gsub (or s:find(...)) written with backslashes."""
    for i, tok in enumerate(toks):
        if tok.kind != "name" or tok.value not in _PATTERN_FUNCS or i == 0:
            continue
        if not (toks[i - 1].kind == "op" and toks[i - 1].value in (".", ":")):
            continue
        if i + 1 >= len(toks) or not (toks[i + 1].kind == "op" and toks[i + 1].value == "("):
            continue
        args = toks[i + 2:_closing(toks, i + 1, "(", ")")]
        if any(t.kind == "string" and _BACKSLASH_PATTERN.search(t.value) for t in args):
            return True
    return False


def lua_hints(source: str | None, message: str) -> list[str]:
    """Hints naming the Lua way for the Python-isms behind a plan error (empty when none apply)."""
    hints: list[str] = []
    toks: list[Token] = []
    if source:
        try:
            toks = tokenize(source)
        except PlanInvalid:
            toks = []
    low = message.lower()
    if "near '['" in low or _python_list_literal(toks):
        hints.append(_HINT_LIST)
    if ("near ':'" in low and "'}' expected" in low) or _python_dict_literal(toks):
        hints.append(_HINT_COLON)
    if "escape sequence" in low or "malformed pattern" in low or "unfinished capture" in low \
            or _backslash_pattern(toks):
        hints.append(_HINT_PATTERN)
    if re.search(r"attempt to (index|concatenate|call|compare|perform arithmetic on) a (nil|table) value", low):
        hints.append(_HINT_ERROR_RESULT)
    m = UNKNOWN_GLOBAL.search(message)
    if m and m.group(1) in _PY_WORDS:
        hints.append(f"`{m.group(1)}` is Python: {_PY_WORDS[m.group(1)]}")
    return list(dict.fromkeys(hints))
