"""Pre-run checks of a Lua plan: size, syntax (compiled, never run) and a lint of names.

The lint uses a small lexer that skips strings and comments. It reports, with the line:
forbidden globals (`os`, `load`, `string.dump`, ...) as SandboxViolation; unknown globals,
unknown `tools.X`, a missing or local `run` as PlanInvalid. Names the plan declares (locals,
parameters, loop variables) or assigns as globals (`run`, helper functions) are fine. Scope is
not tracked: a name declared anywhere counts as known everywhere, so the lint never rejects a
valid plan for scoping reasons; the runtime still catches the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.errors import PlanInvalid, SandboxViolation
from agent.plans.limits import MAX_SOURCE_BYTES
from agent.plans.tools import TOOL_NAMES

__all__ = ["Token", "tokenize", "lint_plan", "syntax_check", "check_plan", "ALLOWED_GLOBALS", "FORBIDDEN"]

KEYWORDS = frozenset("""and break do else elseif end false for function goto if in local nil not or
repeat return then true until while""".split())
ALLOWED_GLOBALS = frozenset({
    "string", "table", "math", "utf8", "coroutine", "pairs", "ipairs", "next", "select", "type",
    "tostring", "tonumber", "error", "assert", "pcall", "xpcall", "setmetatable", "getmetatable",
    "print", "tools", "skills", "_G", "_ENV", "_VERSION", "context",
})
FORBIDDEN = frozenset({
    "os", "io", "debug", "package", "require", "load", "loadstring", "dofile", "loadfile",
    "rawget", "rawset", "rawequal", "rawlen", "collectgarbage", "python", "getfenv", "setfenv",
    "module", "newproxy", "jit", "ffi", "bit32", "unpack", "arg",
})
FORBIDDEN_FIELDS = frozenset({"string.dump"})

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"0[xX](?:[0-9a-fA-F]*\.?[0-9a-fA-F]*)(?:[pP][+-]?\d+)?|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_OPS = ("...", "..", "==", "~=", "<=", ">=", "<<", ">>", "//", "::")
_LONG_OPEN = re.compile(r"\[(=*)\[")


@dataclass(frozen=True)
class Token:
    kind: str   # name, keyword, op, string, number
    value: str
    line: int


def _lex_error(message: str, line: int) -> PlanInvalid:
    return PlanInvalid(f"{message} (line {line})", line=line)


def tokenize(src: str) -> list[Token]:
    """Lua tokens with line numbers; strings and comments are consumed, not interpreted."""
    out: list[Token] = []
    i, line, n = 0, 1, len(src)
    while i < n:
        ch = src[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch in " \t\r\f\v":
            i += 1
        elif src.startswith("--", i):
            m = _LONG_OPEN.match(src, i + 2)
            if m:
                end = src.find("]" + m.group(1) + "]", m.end())
                if end < 0:
                    raise _lex_error("unfinished long comment", line)
                line += src.count("\n", i, end)
                i = end + len(m.group(1)) + 2
            else:
                nl = src.find("\n", i)
                i = n if nl < 0 else nl
        elif ch in "\"'":
            start_line, j = line, i + 1
            while j < n and src[j] != ch:
                if src[j] == "\\":
                    if src.startswith("z", j + 1):
                        j += 2
                        while j < n and src[j] in " \t\r\n\f\v":
                            line += src[j] == "\n"
                            j += 1
                        continue
                    line += src[j + 1:j + 2] == "\n"
                    j += 2
                    continue
                if src[j] == "\n":
                    raise _lex_error("unfinished string", start_line)
                j += 1
            if j >= n:
                raise _lex_error("unfinished string", start_line)
            out.append(Token("string", src[i + 1:j], start_line))
            i = j + 1
        elif ch == "[" and _LONG_OPEN.match(src, i):
            m = _LONG_OPEN.match(src, i)
            assert m is not None
            end = src.find("]" + m.group(1) + "]", m.end())
            if end < 0:
                raise _lex_error("unfinished long string", line)
            out.append(Token("string", src[m.end():end], line))
            line += src.count("\n", i, end)
            i = end + len(m.group(1)) + 2
        elif ch.isdigit() or (ch == "." and src[i + 1:i + 2].isdigit()):
            m = _NUMBER.match(src, i)
            assert m is not None
            out.append(Token("number", m.group(0), line))
            i = m.end()
        elif ch.isalpha() or ch == "_":
            m = _NAME.match(src, i)
            assert m is not None
            word = m.group(0)
            out.append(Token("keyword" if word in KEYWORDS else "name", word, line))
            i = m.end()
        else:
            op = next((o for o in _OPS if src.startswith(o, i)), ch)
            out.append(Token("op", op, line))
            i += len(op)
    return out


def _is(tok: Token | None, kind: str, value: str | None = None) -> bool:
    return tok is not None and tok.kind == kind and (value is None or tok.value == value)


class _Scan:
    """Declared names, assigned globals and name uses of one token stream."""

    def __init__(self, toks: list[Token]) -> None:
        self.toks = toks
        self.declared: set[str] = set()
        self.assigned: dict[str, int] = {}
        self.uses: list[tuple[int, Token]] = []   # (index, token) of names read or called
        self._walk()

    def at(self, i: int) -> Token | None:
        return self.toks[i] if 0 <= i < len(self.toks) else None

    def _declare_list(self, i: int, stop: set[str]) -> int:
        """Declare `a, b <const>, ...` starting at i; returns the index after the list."""
        while i < len(self.toks):
            tok = self.toks[i]
            if tok.kind == "name":
                self.declared.add(tok.value)
                i += 1
                if _is(self.at(i), "op", "<") and _is(self.at(i + 2), "op", ">"):
                    i += 3  # attribute <const> / <close>
            if _is(self.at(i), "op", ","):
                i += 1
                continue
            return i
        return i

    def _params(self, i: int) -> int:
        """Declare parameters of `function ... (a, b, ...)` with i at the opening '('."""
        while i < len(self.toks) and not _is(self.toks[i], "op", ")"):
            if self.toks[i].kind == "name":
                self.declared.add(self.toks[i].value)
            i += 1
        return i

    def _walk(self) -> None:
        stack: list[str] = []     # '{', '(', '[' and block keywords, to tell table keys from assignments
        toks = self.toks
        for i, tok in enumerate(toks):
            prev, nxt = self.at(i - 1), self.at(i + 1)
            if tok.kind == "op" and tok.value in "{([":
                stack.append(tok.value)
            elif tok.kind == "op" and tok.value in "})]":
                if stack and stack[-1] in "{([":
                    stack.pop()
            elif tok.kind == "keyword":
                if tok.value in ("function", "do", "if", "repeat"):
                    stack.append(tok.value)
                elif tok.value in ("end", "until") and stack:
                    stack.pop()
                if tok.value == "local":
                    if _is(nxt, "keyword", "function") and _is(self.at(i + 2), "name"):
                        self.declared.add(toks[i + 2].value)
                    else:
                        self._declare_list(i + 1, set())
                elif tok.value == "for":
                    self._declare_list(i + 1, set())
                elif tok.value == "function":
                    j = i + 1
                    if _is(self.at(j), "name") and not _is(prev, "keyword", "local"):
                        if not (_is(self.at(j + 1), "op", ".") or _is(self.at(j + 1), "op", ":")):
                            self.assigned.setdefault(toks[j].value, toks[j].line)
                    while j < len(toks) and not _is(toks[j], "op", "("):
                        if _is(toks[j], "op", ":"):
                            self.declared.add("self")
                        j += 1
                    self._params(j + 1)
            elif tok.kind == "name":
                if _is(prev, "op", ".") or _is(prev, "op", ":") or _is(prev, "keyword", "goto"):
                    continue
                if _is(prev, "op", "::"):
                    continue  # label
                if _is(prev, "keyword", "function") or _is(prev, "keyword", "local"):
                    continue
                if _is(prev, "op", "<") and _is(nxt, "op", ">") and tok.value in ("const", "close"):
                    continue  # local x <const> attribute
                in_table = bool(stack) and stack[-1] == "{"
                if in_table and _is(nxt, "op", "=") and (_is(prev, "op", "{") or _is(prev, "op", ",") or _is(prev, "op", ";")):
                    continue  # table constructor key
                if self._is_assignment_target(i, in_table):
                    self.assigned.setdefault(tok.value, tok.line)
                    continue
                self.uses.append((i, tok))

    def _is_assignment_target(self, i: int, in_table: bool) -> bool:
        """True for a bare name in `a, b = ...` (not `a.b =`, not inside a table constructor)."""
        if in_table:
            return False
        j = i + 1
        while True:
            tok = self.at(j)
            if _is(tok, "op", "="):
                return True
            if _is(tok, "op", ",") and _is(self.at(j + 1), "name"):
                # skip the next target, including a field path like t.x or t[1]
                j += 2
                while _is(self.at(j), "op", ".") and _is(self.at(j + 1), "name"):
                    j += 2
                continue
            return False


def lint_plan(source: str) -> None:
    """Raise SandboxViolation / PlanInvalid (exact message, `line`) for a bad plan; else return."""
    toks = tokenize(source)
    scan = _Scan(toks)
    known = ALLOWED_GLOBALS | scan.declared | set(scan.assigned)
    for i, tok in scan.uses:
        name = tok.value
        field = _field_after(toks, i)
        if name in FORBIDDEN and name not in scan.declared and name not in scan.assigned:
            shown = f"{name}.{field}" if field else name
            raise SandboxViolation(f"forbidden: {shown} (line {tok.line})", line=tok.line, name=name)
        if name in ("_G", "_ENV") and field in FORBIDDEN:
            raise SandboxViolation(f"forbidden: {field} (line {tok.line})", line=tok.line, name=field)
        if name == "string" and field and f"string.{field}" in FORBIDDEN_FIELDS and "string" not in scan.declared:
            raise SandboxViolation(f"forbidden: string.{field} (line {tok.line})", line=tok.line,
                                   name=f"string.{field}")
        if name not in known:
            raise PlanInvalid(f"unknown global '{name}' (line {tok.line})", line=tok.line, name=name)
        tool = _tool_after(toks, i, name)
        if tool is not None and tool not in TOOL_NAMES and "tools" not in scan.declared:
            raise PlanInvalid(f"unknown tool 'tools.{tool}' (line {tok.line}); tools: {', '.join(TOOL_NAMES)}",
                              line=tok.line, name=f"tools.{tool}")
    if "run" not in scan.assigned:
        raise PlanInvalid("plan does not define function run(context)", line=1)


def _field_after(toks: list[Token], i: int) -> str | None:
    """`x` in `name.x` or `name["x"]` right after token i."""
    if i + 2 < len(toks) and _is(toks[i + 1], "op", ".") and toks[i + 2].kind == "name":
        return toks[i + 2].value
    if i + 3 < len(toks) and _is(toks[i + 1], "op", "[") and toks[i + 2].kind == "string" and _is(toks[i + 3], "op", "]"):
        return toks[i + 2].value
    return None


def _tool_after(toks: list[Token], i: int, name: str) -> str | None:
    """The tool name in `tools.X`, `tools:X`, `context.tools.X` (and the `["X"]` forms)."""
    j = i
    if name == "context" and _field_after(toks, i) == "tools":
        j = i + 2
    elif name != "tools":
        return None
    if j + 2 < len(toks) and _is(toks[j + 1], "op", ":") and toks[j + 2].kind == "name":
        return toks[j + 2].value
    return _field_after(toks, j)


def syntax_check(source: str) -> None:
    """Compile the plan as text (mode "t") without running it; PlanInvalid with the line on error."""
    from agent.plans.sandbox import new_runtime  # lupa is imported only when a plan is checked

    lua = new_runtime(max_memory=64 * 1024 * 1024)
    compile_only = lua.eval("function(src) local f, err = load(src, '=plan', 't', {}) return f ~= nil, err end")
    ok, err = compile_only(source.encode("utf-8", errors="surrogateescape"))
    if ok:
        return
    text = err.decode("utf-8", errors="replace") if isinstance(err, bytes) else str(err)
    m = re.match(r"plan:(\d+):\s*(.*)", text, re.S)
    if m:
        raise PlanInvalid(f"syntax error: {m.group(2)} (line {m.group(1)})", line=int(m.group(1)))
    raise PlanInvalid(f"syntax error: {text}")


def check_plan(source: str) -> None:
    """All pre-run checks: size, text only (no bytecode), syntax, lint."""
    if not isinstance(source, str) or not source.strip():
        raise PlanInvalid("empty plan")
    if len(source.encode("utf-8", errors="surrogateescape")) > MAX_SOURCE_BYTES:
        raise PlanInvalid(f"plan is larger than {MAX_SOURCE_BYTES} bytes")
    if source.startswith("\x1bLua"):
        raise SandboxViolation("forbidden: precompiled bytecode", name="bytecode", line=1)
    syntax_check(source)
    lint_plan(source)
