"""The `---@skill { ... }` header (seed 000 §7.1), read without running any code.

A small tokenizer and parser for the Lua table-constructor subset a header needs: strings,
numbers, booleans, nested tables with `key = value` or positional entries. Anything else — a
function call, a concatenation, a variable — is refused with the line it is on, so reading a
header can never execute the skill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agent.errors import SkillMetadataInvalid

__all__ = ["SkillMetadata", "parse_metadata", "parse_header_table", "NAME_RE", "HEADER_TAG"]

HEADER_TAG = "---@skill"
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_MAX_HEADER_LINES = 200
_FIELDS = {"name", "version", "description", "dependencies", "paths", "urls", "public_functions", "commands"}
_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+)
  | (?P<punct>[{}=,;\[\]])
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>-?(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?))
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
""", re.VERBOSE)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0", "a": "\a",
            "b": "\b", "f": "\f", "v": "\v", "\n": "\n"}


@dataclass(frozen=True)
class SkillMetadata:
    """A parsed, validated skill header."""

    name: str
    version: str
    description: str
    dependencies: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    public_functions: tuple[str, ...] = ("run",)
    commands: tuple[str, ...] = ()     # our addition: programs `exec` may start (see MASTER-SPEC "Skills")
    header_lines: int = 0
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "description": self.description,
                "dependencies": list(self.dependencies), "paths": list(self.paths), "urls": list(self.urls),
                "public_functions": list(self.public_functions), "commands": list(self.commands)}


@dataclass
class _Tok:
    kind: str
    text: str
    line: int


def _unquote(text: str, line: int) -> str:
    body = text[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            nxt = body[i + 1] if i + 1 < len(body) else ""
            if nxt not in _ESCAPES:
                raise SkillMetadataInvalid(f"line {line}: unsupported escape \\{nxt} in a header string", line=line)
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _tokenize(lines: list[tuple[int, str]]) -> list[_Tok]:
    toks: list[_Tok] = []
    for line, text in lines:
        pos = 0
        while pos < len(text):
            if text.startswith("--", pos):
                break  # a comment inside the header ends the line
            m = _TOKEN.match(text, pos)
            if m is None:
                raise SkillMetadataInvalid(f"line {line}: unexpected {text[pos:pos + 12]!r} in the skill header "
                                           "(only strings, numbers, booleans and tables are allowed)", line=line)
            pos = m.end()
            kind = m.lastgroup or ""
            if kind != "ws":
                toks.append(_Tok(kind, m.group(), line))
    return toks


class _Parser:
    def __init__(self, toks: list[_Tok], last_line: int) -> None:
        self.toks = toks
        self.i = 0
        self.last_line = last_line

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise SkillMetadataInvalid(f"line {self.last_line}: the skill header ends too early (missing '}}'?)",
                                       line=self.last_line)
        self.i += 1
        return tok

    def expect(self, text: str) -> _Tok:
        tok = self.take()
        if tok.text != text:
            raise SkillMetadataInvalid(f"line {tok.line}: expected '{text}', found {tok.text!r}", line=tok.line)
        return tok

    def value(self) -> Any:
        tok = self.take()
        if tok.kind == "str":
            return _unquote(tok.text, tok.line)
        if tok.kind == "num":
            return float(tok.text) if any(c in tok.text for c in ".eE") and not tok.text.lower().startswith(
                ("0x", "-0x")) else int(tok.text, 0)
        if tok.kind == "name" and tok.text in ("true", "false", "nil"):
            return {"true": True, "false": False, "nil": None}[tok.text]
        if tok.text == "{":
            self.i -= 1
            return self.table()
        raise SkillMetadataInvalid(f"line {tok.line}: {tok.text!r} is not a literal value (no variables, calls "
                                   "or expressions in a skill header)", line=tok.line)

    def table(self) -> Any:
        self.expect("{")
        named: dict[str, Any] = {}
        items: list[Any] = []
        while True:
            tok = self.peek()
            if tok is None:
                self.take()
            assert tok is not None
            if tok.text == "}":
                self.i += 1
                break
            nxt = self.toks[self.i + 1] if self.i + 1 < len(self.toks) else None
            if tok.kind == "name" and nxt is not None and nxt.text == "=":
                self.i += 2
                if tok.text in named:
                    raise SkillMetadataInvalid(f"line {tok.line}: field '{tok.text}' is given twice", line=tok.line)
                named[tok.text] = self.value()
            elif tok.text == "[":
                self.i += 1
                key_tok = self.take()
                if key_tok.kind != "str":
                    raise SkillMetadataInvalid(f"line {key_tok.line}: only string keys are allowed in [ ]",
                                               line=key_tok.line)
                self.expect("]")
                self.expect("=")
                named[_unquote(key_tok.text, key_tok.line)] = self.value()
            else:
                items.append(self.value())
            sep = self.peek()
            if sep is not None and sep.text in (",", ";"):
                self.i += 1
            elif sep is None or sep.text != "}":
                found = sep.text if sep else "end of header"
                line = sep.line if sep else self.last_line
                raise SkillMetadataInvalid(f"line {line}: expected ',' or '}}', found {found!r}", line=line)
        if named and items:
            return {**{str(i + 1): v for i, v in enumerate(items)}, **named}
        return named if named else items


def parse_header_table(source: str) -> tuple[dict[str, Any], int, dict[str, int]]:
    """The header's table as Python data, the line after the header, and each field's line."""
    lines = source.splitlines()
    first = next((i for i, text in enumerate(lines) if text.strip()), None)
    if first is None or not lines[first].lstrip().startswith(HEADER_TAG):
        line = (first or 0) + 1
        raise SkillMetadataInvalid(f"line {line}: a skill must start with a '{HEADER_TAG} {{ ... }}' header",
                                   line=line)
    body: list[tuple[int, str]] = [(first + 1, lines[first].lstrip()[len(HEADER_TAG):])]
    depth = body[0][1].count("{") - body[0][1].count("}")
    i = first + 1
    while depth > 0 and i < len(lines) and i - first < _MAX_HEADER_LINES:
        text = lines[i].lstrip()
        if not text.startswith("---"):
            break
        chunk = text[3:]
        body.append((i + 1, chunk))
        depth += chunk.count("{") - chunk.count("}")
        i += 1
    toks = _tokenize(body)
    if not toks or toks[0].text != "{":
        raise SkillMetadataInvalid(f"line {first + 1}: '{HEADER_TAG}' must be followed by a table '{{ ... }}'",
                                   line=first + 1)
    parser = _Parser(toks, body[-1][0])
    table = parser.table()
    if parser.peek() is not None:
        extra = parser.take()
        raise SkillMetadataInvalid(f"line {extra.line}: unexpected {extra.text!r} after the header table",
                                   line=extra.line)
    if not isinstance(table, dict):
        raise SkillMetadataInvalid(f"line {first + 1}: the header table needs named fields (name = ...)",
                                   line=first + 1)
    field_lines = {}
    for tok_i, tok in enumerate(toks[:-1]):
        if tok.kind == "name" and toks[tok_i + 1].text == "=" and tok.text not in field_lines:
            field_lines[tok.text] = tok.line
    return table, i + 1, field_lines


def _strings(table: dict[str, Any], key: str, line: int, *, names: bool = False) -> tuple[str, ...]:
    value = table.get(key, [])
    if value == {}:
        value = []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SkillMetadataInvalid(f"line {line}: '{key}' must be a list of non-empty strings", line=line)
    if names:
        bad = [v for v in value if not NAME_RE.match(v)]
        if bad:
            raise SkillMetadataInvalid(f"line {line}: '{key}' entry {bad[0]!r} is not a valid name", line=line)
    return tuple(value)


def parse_metadata(source: str, *, expect_name: str | None = None) -> SkillMetadata:
    """Parse and validate the header of a skill's source; SkillMetadataInvalid names the line."""
    table, end_line, lines = parse_header_table(source)
    top = min(lines.values(), default=1)
    unknown = sorted(set(table) - _FIELDS)
    if unknown:
        line = lines.get(unknown[0], top)
        raise SkillMetadataInvalid(f"line {line}: unknown skill header field '{unknown[0]}' "
                                   f"(known: {', '.join(sorted(_FIELDS))})", line=line)
    for key in ("name", "version", "description"):
        value = table.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key == "version":
            value = table[key] = str(value)
        if not isinstance(value, str) or not value.strip():
            line = lines.get(key, top)
            raise SkillMetadataInvalid(f"line {line}: skill header field '{key}' is missing or not a string",
                                       line=line)
    name = table["name"]
    if not NAME_RE.match(name):
        raise SkillMetadataInvalid(f"line {lines['name']}: skill name {name!r} must be an identifier "
                                   "(letters, digits, '_')", line=lines["name"])
    if expect_name is not None and name != expect_name:
        raise SkillMetadataInvalid(f"line {lines['name']}: the header names skill {name!r} but the file is "
                                   f"{expect_name}.lua", line=lines["name"])
    publics = _strings(table, "public_functions", lines.get("public_functions", top), names=True) or ("run",)
    return SkillMetadata(
        name=name, version=table["version"].strip(), description=table["description"].strip(),
        dependencies=_strings(table, "dependencies", lines.get("dependencies", top), names=True),
        paths=_strings(table, "paths", lines.get("paths", top)),
        urls=_strings(table, "urls", lines.get("urls", top)),
        public_functions=publics,
        commands=_strings(table, "commands", lines.get("commands", top)),
        header_lines=end_line - 1, raw=table)
