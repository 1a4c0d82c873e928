"""A llama.cpp GBNF grammar for this project's Lua plan subset, per role.

One source of truth: the tool registry (`TOOL_SPECS`: names, positional parameters, options), the
role's answer schema (`schemas/answers/<role>.json`: the keys and value kinds of the table `run`
returns) and the lint's name lists (keywords, forbidden and sandbox globals). The grammar is a guide
for sampling, not the validator: whatever it lets through still goes through `check_plan` (lupa's
`load` plus the lint) before it runs.

The subset (MASTER-SPEC §13 "Grammar-constrained plans"):
- the reply is a ```lua fence (after at most three short prose lines) or a bare chunk;
- the chunk: one `function run(context) ... end` whose every `return` is a table shaped like the
  answer (keys, value kinds, `allOf` if/then requirements, `minItems`/`maxItems` from the schema);
  no helper functions, so no call of a bare name but the builtins (a name the plan made up, like
  `require_path(...)`, is not a function it can call);
- statements: `local`, single assignment, calls, if/elseif/else, numeric and generic `for`
  (ipairs, pairs, gmatch), while, repeat, `break` inside loops;
- expressions: short strings with Lua escapes, long strings `[[...]]` / `[==[...]==]`, numbers,
  nil/true/false, table constructors (`k = v`, `[e] = v`, positional), field/index/method access,
  calls of `tools.<allowed tool>`, of allow-listed `string`/`table`/`math` functions and builtins,
  Lua operators (`..`, `~=`, `and`/`or`/`not`, `#`).
Every accepted text that `find_lua_plan` extracts compiles with Lua 5.4 (proven by a sampling
test): keywords are never names, `--` never starts by accident (`a--b`), a number is never glued
to `..`, `[[` never opens by accident (`t[ [[x]] ]`), and no string or comment holds "```", which
would cut the fence. Names, whitespace runs, statements per block and prose are bounded, so a
model that loops is led to the end of the plan instead of filling its token budget.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

from agent.plans.edit_anchors import anchored_text, is_edit_item
from agent.plans.gbnf import Rules, members_in_order
from agent.plans.gbnf import alt as _alt
from agent.plans.gbnf import char_class as _cls
from agent.plans.gbnf import lit as _lit
from agent.plans.lint import ALLOWED_GLOBALS, FORBIDDEN, KEYWORDS
from agent.plans.tools import TOOL_NAMES, TOOL_SPECS, ToolSpec
from agent.protocol import ROLES
from agent.resources import schema_dir

__all__ = ["plan_grammar", "STRING_FUNCTIONS", "TABLE_FUNCTIONS", "MATH_FUNCTIONS", "MATH_CONSTANTS",
           "BUILTIN_FUNCTIONS", "RESERVED_NAMES"]

# The library calls a plan may write (all present in the sandbox; a test checks that).
STRING_FUNCTIONS: tuple[str, ...] = ("byte", "char", "find", "format", "gmatch", "gsub", "len", "lower", "match",
                                     "rep", "reverse", "sub", "upper")
TABLE_FUNCTIONS: tuple[str, ...] = ("concat", "insert", "remove", "sort", "unpack")
MATH_FUNCTIONS: tuple[str, ...] = ("abs", "ceil", "floor", "fmod", "max", "min", "sqrt", "tointeger")
MATH_CONSTANTS: tuple[str, ...] = ("huge", "pi", "maxinteger", "mininteger")
BUILTIN_FUNCTIONS: tuple[str, ...] = ("assert", "error", "ipairs", "next", "pairs", "print", "select", "tonumber",
                                      "tostring", "type")
# Never a variable name: keywords would not compile; forbidden globals, library tables and tool names
# as bare names are exactly the mistakes the lint rejects (`os.execute`, `write(...)`, `string.dump`);
# library tables and builtins are reached through their own rules (only allow-listed functions).
# Python's and JSON's constants and Python builtins are names in Lua: excluded so that a model is
# steered to nil/true/false, `#`, tostring, tonumber, ipairs instead of unknown globals.
_PYTHON_NAMES = frozenset({"None", "True", "False", "null", "len", "str", "int", "float", "range", "open",
                           "isinstance", "enumerate", "sorted", "dict", "repr"})
RESERVED_NAMES: frozenset[str] = frozenset(KEYWORDS | FORBIDDEN | (ALLOWED_GLOBALS - {"context"}) | set(TOOL_NAMES)
                                           | _PYTHON_NAMES)

_WS_SAME_LINE = 8     # spaces or tabs before an assignment's `=`
_WS_MAX = 48          # whitespace items between two tokens: room for indentation, no endless blank lines
_PROSE_LINES = 3      # prose lines allowed before the ```lua fence
_PROSE_CHARS = 240
_NAME_TAIL = 31       # characters after a name's first one that leaves the reserved-word trie
_BLOCK_STATEMENTS = 40  # per block: a model repeating one line is made to reach its `return`
_OPERATORS = 16       # binary operators in one expression (nested parentheses start afresh)
_COMMENTS = 6         # comment lines in one run of whitespace (plus one right after a token)
_COMMENT_CHARS = 160
_HEAD_COMMENT_CHARS = 480  # the plan's first line: small models restate the whole goal there
_DEPTH = 5            # blocks nested in blocks (run's body is depth 0)
_LONG_LEVELS = 4      # long strings [[...]] up to [====[...]====]
_BAN_PREFIX_MIN = 4   # a banned name this long is no variable's beginning either
_BAN_PREFIX_MAX = 7   # ... of at most this many characters
_FENCE = "`"
_CLOSERS = frozenset({"end", "else", "then", "until"})
# A keyword glued to the next word is no name: `returnexpected_outputs` is a statement and a value
# a small model meant, and it repeats such names instead of writing the keyword.
_GLUED_STARTS = frozenset({"return", "function"})


_ID_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_ID_CHAR = _ID_START | frozenset("0123456789")
# `require` is forbidden; refused, small models reach for it by other names (`requirepath`,
# `require_path_or_file`): no variable starts with
# `require` unless it goes on as `required…`, `requirement…` or `requires…`.
_LOADER_STARTS = frozenset("require" + c for c in _ID_CHAR - set("dms"))


class _Rules(Rules):
    """The grammar's rules, with what its builders share."""

    def __init__(self, anchors: dict[str, str] | None = None) -> None:
        super().__init__()
        self.memo: dict[str, str] = {}      # answer sub-schema (as JSON) -> its rule, shared by variants
        self.anchors = anchors or {}        # path -> the text a plan's edit copies from (see edit_anchors)
        self._olds: list[tuple[str, str]] | None = None

    def olds(self) -> list[tuple[str, str]]:
        """(the path as a Lua string literal, the rule of its `old` text) for each anchored file."""
        if self._olds is None:
            self._olds = []
            for path, text in self.anchors.items():
                old = anchored_text(self, self.fresh(f"old-{path}"), text)
                if old is not None:
                    self._olds.append((_literal(path), old))
        return self._olds


# -- lexical rules ----------------------------------------------------------------------------
def _names(g: _Rules, rule: str, excluded: frozenset[str], banned_starts: frozenset[str] = frozenset()) -> None:
    """`rule`: Lua identifiers except `excluded` and any starting with one of `banned_starts`, as a
    trie of rules (deterministic for the sampler)."""
    words = excluded | banned_starts

    def node(prefix: str) -> str:
        name = rule if not prefix else f"{rule}-x-{prefix.replace('_', '-').lower()}-{_case_tag(prefix)}"
        allowed = _ID_START if not prefix else _ID_CHAR
        children = sorted({w[len(prefix)] for w in words if w.startswith(prefix) and len(w) > len(prefix)})
        alts = [f"{_lit(c)} {node(prefix + c)}" for c in children if prefix + c not in banned_starts]
        rest = sorted(allowed - set(children))
        alts.append(f"{_cls(rest)} idtail")
        if prefix and prefix not in excluded:
            alts.append('""')
        return g.add(name, " | ".join(alts))

    node("")


def _case_tag(prefix: str) -> str:
    """Distinguishes rule names of prefixes that differ only in case or `_` vs `-` (e.g. _G / _g)."""
    return "".join("u" if c.isupper() else ("s" if c == "_" else "l") for c in prefix)


def _no_fence_text(g: _Rules, base: str, excluded: str, extra: Sequence[str], end: str) -> str:
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


def _long_string(g: _Rules, level: int) -> str:
    """`[==[ ... ]==]`: any text (newlines, quotes, backslashes) up to the first closing bracket.

    States: how much of the closing bracket `]` `=`*level `]` the text ends with (k = 0..level+1,
    `]` then k-1 `=`), times the backtick run (0..2), plus the start of a line. The text may not end
    right after `]` and all the `=` of the level, since the closing bracket would then close one
    character early. No line of the text starts with a backtick: a model that forgot the closing
    bracket and reached for the reply's closing fence ("``" at a line's start, then prose to its
    token limit) is held to the text's own end instead.
    """
    eq = "=" * level
    close = "]" + eq + "]"
    full = level + 1                      # state: `]` plus every `=` seen; `]` now would close
    line_start = f"ls{level}-nl"

    def state(k: int, b: int) -> str:
        return f"ls{level}-k{k}-b{b}"

    # Reachable states: (0, b) after b backticks, (k, 0) inside a possible closing bracket, and the
    # start of a line (as (0, 0), but no backtick).
    for k, b in [(0, 0), (0, 1), (0, 2), *((k, 0) for k in range(1, full + 1)), (0, -1)]:
        alts = [] if k == full else [_lit(close)]
        alts.append(f"{_cls(']=' + _FENCE + chr(10), negate=True)} {state(0, 0)}")
        alts.append(f"{_lit(chr(10))} {line_start}")
        if 0 <= b < 2:
            alts.append(f"{_lit(_FENCE)} {state(0, b + 1)}")
        if k != full:
            alts.append(f"{_lit(']')} {state(1, 0)}")
        alts.append(f"{_lit('=')} {state(k + 1 if 1 <= k < full else 0, 0)}")
        g.add(line_start if b == -1 else state(k, b), " | ".join(alts))
    return g.add(f"lstr{level}", f"{_lit('[' + eq + '[')} {state(0, 0)}")


_FIRST_WORD = re.compile(r"_*[A-Za-z][a-z0-9]*")


def _bans(name: str) -> tuple[set[str], set[str]]:
    """What a banned name bans (see `plan_grammar`): (beginnings no variable may have, whole names).

    Its first word (up to a `_` or a capital, at most `_BAN_PREFIX_MAX` characters) begins no
    variable when it is long enough: a model banned `functionPrompt` tries `function_prompt`, and
    words it glues together (`requiredirpath`) have no boundary to find. A shorter first word
    followed by another word bans that boundary: `ioFileSync` bans `io` followed by any capital
    (`io_` likewise), so `ioSync` is no way around it."""
    m = _FIRST_WORD.match(name)
    word = (m.group(0) if m else name)[:_BAN_PREFIX_MAX]
    if len(word) >= _BAN_PREFIX_MIN:
        return {word}, set()
    after = name[len(word):len(word) + 1]
    if after == "_":
        return {word + "_"}, {name}
    if after.isupper():
        return {word + c for c in _ID_START if c.isupper()}, {name}
    return set(), {name}


def _lexical(g: _Rules, name_excluded: frozenset[str], name_starts: frozenset[str] = frozenset()) -> None:
    # One bounded line; not `--[` (a long comment), no backtick (no "```"), no "\r" (Lua ends a
    # comment there too, and the rest would escape into code). A comment follows a whitespace
    # character, so `a - --x` never becomes `a ---x`.
    first, rest = _cls("\n\r`[", negate=True), _cls("\n\r`", negate=True)
    g.add("comment", f'"--" ({first} {rest}{{0,{_COMMENT_CHARS - 1}}})? "\\n"')
    g.add("headcomment", f'"--" ({first} {rest}{{0,{_HEAD_COMMENT_CHARS - 1}}})? "\\n"')
    g.add("wsp", f"[ \\t\\n]{{0,{_WS_MAX}}}")
    g.add("ws", f"wsp ([ \\t\\n] comment wsp){{0,{_COMMENTS}}}")
    g.add("sp", "[ \\t\\n] comment? ws")
    # Names are bounded: a small model once spent its whole budget on one ever-growing identifier.
    g.add("idtail", f"[a-zA-Z0-9_]{{0,{_NAME_TAIL}}}")
    # No variable starts with a word that closes a block: a model about to write `end` where the
    # grammar wants a statement is steered to one, not into a name like `endlua`.
    _names(g, "name", name_excluded, _CLOSERS | _GLUED_STARTS | _LOADER_STARTS | name_starts)
    _names(g, "ident", frozenset(KEYWORDS))
    # A field is never `tools`: `context.tools.read_path(...)` is how a model reaches for a tool
    # that does not exist, and the lint refuses it as an unknown tool.
    _names(g, "field", frozenset(KEYWORDS | {"tools"}))
    g.add("num", '[0-9]+ ("." [0-9]+)? ([eE] [+\\x2D]? [0-9]+)? | "0" [xX] [0-9a-fA-F]+')
    escape = ('"\\\\" ([abfnrtv] | "\\\\" | "\\"" | "\'" | "x" [0-9a-fA-F]{2} | [01] [0-9] [0-9] | '
              '"2" [0-4] [0-9] | "25" [0-5] | "u{" [0-9a-fA-F]{1,6} "}")')
    g.add("esc", escape)
    dq = _no_fence_text(g, "dq", '"\\\n\r', ["esc"], _lit('"'))
    sq = _no_fence_text(g, "sq", "'\\\n\r", ["esc"], _lit("'"))
    g.add("sstr", f'"\\"" {dq} | "\'" {sq}')
    g.add("lstr", " | ".join(_long_string(g, level) for level in range(_LONG_LEVELS + 1)))


# -- expressions ------------------------------------------------------------------------------
def _tool_call(g: _Rules, spec: ToolSpec) -> str:
    """`tools.<name>(...)`: positional parameters (the required ones first), then an options table;
    or one table of named arguments. Positional arguments are scalar expressions (all are strings)."""
    base = "tool-" + spec.name.replace("_", "-")
    n, r = len(spec.params), len(spec.required)
    if spec.params[:r] != spec.required:
        raise ValueError(f"tool {spec.name}: required parameters must come first")
    sep = 'ws "," ws'
    if spec.open_options:
        opts: str | None = "table"
    elif spec.options:
        key = g.add(f"{base}-opt", f"{_alt([_lit(o) for o in spec.options])} ws \"=\" ws expr")
        # As many entries as there are options: otherwise a looping model may repeat
        # `replace_all = true, ` in an edit's options until its stream is stopped.
        more = f"(ws fsep ws {key}){{0,{len(spec.options) - 1}}}"
        opts = g.add(f"{base}-opts", f'"{{" ws ({key} {more} (ws fsep)? ws)? "}}"')
    else:
        opts = None

    def after(i: int) -> str:               # after i positional arguments
        if i == n:
            return f"({sep} {opts})?" if opts else ""
        more = f"{sep} sexpr {after(i + 1)}".strip()
        return more if i < r else f"({more})?"

    if spec.name == "edit" and g.olds():
        return _anchored_edit_call(g, base, opts)
    forms = [f"sexpr {after(1)}".strip()] if n else []
    named_keys = [*spec.params, *spec.options]
    if named_keys:
        key = g.add(f"{base}-named-field", f"{_alt([_lit(k) for k in named_keys])} ws \"=\" ws expr")
        more = f"(ws fsep ws {key}){{0,{len(named_keys) - 1}}}"
        forms.append(g.add(f"{base}-named", f'"{{" ws {key} {more} (ws fsep)? ws "}}"'))
    if not forms:
        return g.add(base, f'"tools.{spec.name}()"')
    body = _alt(forms)
    inner = f"({body} ws)?" if r == 0 else f"{body} ws"
    return g.add(base, f'"tools.{spec.name}(" ws {inner} ")"')


def _anchored_edit_call(g: _Rules, base: str, opts: str | None) -> str:
    """`tools.edit(path, old, new[, options])` where path is a quoted file and old a copy of its text
    (see edit_anchors): small models' edits of a class drop `self` or re-indent it."""
    more = f'(ws "," ws {opts})?' if opts else ""
    per_file = [f'({path}) ws "," ws {old} ws "," ws sexpr {more}' for path, old in g.olds()]
    return g.add(base, f'"tools.edit(" ws {_alt(per_file)} ws ")"')


def _expressions(g: _Rules, specs: Sequence[ToolSpec]) -> None:
    calls = [_tool_call(g, s) for s in specs]
    calls.append(f'"string." {_alt([_lit(f) for f in STRING_FUNCTIONS])} args')
    calls.append(f'"table." {_alt([_lit(f) for f in TABLE_FUNCTIONS])} args')
    calls.append(f'"math." {_alt([_lit(f) for f in MATH_FUNCTIONS])} args')
    calls.append(f"{_alt([_lit(f) for f in BUILTIN_FUNCTIONS])} args")
    g.add("libcall", " | ".join(calls))
    g.add("args", '"(" ws (explist ws)? ")"')
    g.add("explist", 'expr (ws "," ws expr)*')
    g.add("acc", '"." field | "[" ws exprnl ws "]"')
    g.add("meth", f'":" {_alt([_lit(f) for f in STRING_FUNCTIONS])} args')
    # No call right after a field or index (`x.y(...)`): tool results are data, and that is how
    # small models write `file.read()`, `lines.append()`, `path.endswith()`, `context.tools.nope()`.
    g.add("pt-c", '"" | (args | meth) pt-c | acc pt-a')
    g.add("pt-a", '"" | meth pt-c | acc pt-a')
    # A bare name is a value, never called (the plan defines no functions): a call of a made-up
    # `require_path("stats")` would otherwise reach the lint only after the whole reply.
    g.add("pexp", f'name pt-a | ("(" ws expr ws ")" | libcall) pt-c | "math." {_alt([_lit(c) for c in MATH_CONSTANTS])}')
    g.add("fsep", '"," | ";"')
    g.add("tfield", 'ident ws "=" ws expr | "[" ws exprnl ws "]" ws "=" ws expr | expr')
    g.add("table", '"{" ws (tfield (ws fsep ws tfield)* (ws fsep)? ws)? "}"')
    # Operands by what may come first; `num` is kept apart since `1..x` would not lex.
    everything = ["sstr", "lstr", '"nil"', '"true"', '"false"', "table", "pexp"]
    g.add("opnd", " | ".join(everything))
    g.add("opnd-nl", " | ".join(o for o in everything if o != "lstr"))      # after `[`: `[[` would open a string
    g.add("opnd-nt", " | ".join(o for o in everything if o != "table"))     # scalar-first (tool arguments)
    g.add("unit-n", '"-" unit-n-nm | unit-n-nm')
    g.add("unit-n-nm", 'num | "not" sp unit-n | "#" ws unit-n')
    for suffix, operand in (("", "opnd"), ("-nl", "opnd-nl"), ("-nt", "opnd-nt")):
        g.add(f"unit-o{suffix}", f'"-" unit-o-nm | {operand} | "not" sp unit-o | "#" ws unit-o')
    g.add("unit-o-nm", 'opnd | "not" sp unit-o | "#" ws unit-o')
    # An operand, then up to _OPERATORS binary operators each with its operand; the count is the
    # level k of the rules (a model once chained `x == x == x ...` until its budget ran out).
    symops = _alt([_lit(o) for o in ["+", "*", "/", "//", "%", "^", "==", "~=", "<=", ">=", "<", ">"]])
    for k in range(_OPERATORS + 1):
        tail_n, tail_o = (f"tail-n{k}", f"tail-o{k}") if k < _OPERATORS else ("tail-n", "tail-o")
        expr, expr_nm = (f"expr{k}", f"expr-nm{k}") if k < _OPERATORS else ("expr", "expr-nm")
        g.add(expr, f"unit-n {tail_n} | unit-o {tail_o}")
        g.add(expr_nm, f"unit-n-nm {tail_n} | unit-o-nm {tail_o}")   # right after a binary `-`: `a--b` is a comment
        if k == 0:
            g.add(tail_n, '""')
            g.add(tail_o, '""')
            continue
        binop = f"binop{k}"
        g.add(binop, f'ws {symops} ws expr{k - 1} | ws "-" (sp expr{k - 1} | expr-nm{k - 1}) | '
                     f'sp ("and" | "or") sp expr{k - 1}')
        g.add(tail_n, f'"" | sp ".." ws expr{k - 1} | {binop}')      # `1..x` would not lex
        g.add(tail_o, f'"" | ws ".." ws expr{k - 1} | {binop}')
    g.add("exprnl", "unit-n tail-n | unit-o-nl tail-o")
    g.add("sexpr", "unit-n tail-n | unit-o-nt tail-o")
    # Typed answer values: the literal forms of the JSON type, or any expression that starts with a
    # name or call (a variable holding the value): never a table where a string belongs.
    g.add("v-ref", "pexp tail-o")
    g.add("v-str", "(sstr | lstr | pexp) tail-o")
    g.add("v-num", 'unit-n tail-n | ("-" unit-o-nm | "#" ws unit-o | pexp) tail-o')
    g.add("v-bool", '("true" | "false" | "not" sp unit-o | pexp) tail-o | "not" sp unit-n tail-n')


# -- statements -------------------------------------------------------------------------------
def _statements(g: _Rules, answer: str) -> None:
    """Blocks for `run` (every return is the answer), in and out of loops."""
    g.add("namelist", 'name (ws "," ws name)*')
    # An assignment's `=` is on its target's line: otherwise `x  -- comment` then
    # `= returnexpected_outputs` on the next line is a valid Lua assignment after a comment, which a
    # looping model can repeat for a hundred lines.
    g.add("eq", f'[ \\t]{{0,{_WS_SAME_LINE}}} "="')
    g.add("local", '"local" sp namelist (eq ws explist)?')
    # A call statement ends in a call, an assignment target in a field, index or bare name; as in
    # expressions, no call right after a field or index. Both start with a name: one rule.
    g.add("cs-n", "meth cs-c | acc cs-a")                   # after the name (never called)
    g.add("cs-c", '"" | (args | meth) cs-c | acc cs-a')     # after a call
    g.add("cs-a", "meth cs-c | acc cs-a")                   # after a field or index
    g.add("as-n", '"" | meth as-c | acc as-a')
    g.add("as-c", "(args | meth) as-c | acc as-a")
    g.add("as-a", '"" | meth as-c | acc as-a')
    g.add("namestat", 'name (cs-n | as-n eq ws expr)')
    g.add("iter", '("ipairs" | "pairs") ws "(" ws expr ws ")" | "string.gmatch" args | name ":gmatch" args')
    g.add("ret-r", f'"return" sp {answer}')
    # Blocks are numbered by depth: below _DEPTH only simple statements (a looping model may nest
    # `if context.x == ... then` checks ever deeper until its budget runs out).
    for kind in ("r",):
        for loop in (0, 1):
            for depth in range(_DEPTH + 1):
                stat, block = f"stat-{kind}{loop}-d{depth}", f"block-{kind}{loop}-d{depth}"
                alts = ["local", "namestat", "libcall cs-c"]
                if depth < _DEPTH:
                    same, inner = f"block-{kind}{loop}-d{depth + 1}", f"block-{kind}1-d{depth + 1}"
                    alts += [f'"if" sp expr sp "then" {same} (sp "elseif" sp expr sp "then" {same})* '
                             f'(sp "else" {same})? sp "end"',
                             f'"for" sp name ws "=" ws expr ws "," ws expr (ws "," ws expr)? sp "do" {inner} sp "end"',
                             f'"for" sp namelist sp "in" sp iter sp "do" {inner} sp "end"',
                             f'"while" sp expr sp "do" {inner} sp "end"',
                             f'"repeat" {inner} sp "until" sp expr']
                if loop:
                    alts.append('"break"')
                g.add(stat, " | ".join(alts))
                g.add(block, f"(sp {stat}){{0,{_BLOCK_STATEMENTS}}} (sp ret-{kind})?")
    # `run` ends in its answer, or in an `if` whose every branch (an `else` included) ends in one:
    # a model that wrote `if ok then return A else return B end` and closed `run` was otherwise
    # held from `end` and wrote a name starting with it ("endlua"), then anything, to its limit.
    for depth in range(_DEPTH + 1):
        stats = f"(sp stat-r0-d{depth}){{0,{_BLOCK_STATEMENTS}}}"
        if depth < _DEPTH:
            inner = f"rblock-d{depth + 1}"
            g.add(f"rif-d{depth}", f'"if" sp expr sp "then" {inner} (sp "elseif" sp expr sp "then" {inner})* '
                                    f'sp "else" {inner} sp "end"')
            g.add(f"rblock-d{depth}", f"{stats} sp (ret-r | rif-d{depth})")
        else:
            g.add(f"rblock-d{depth}", f"{stats} sp ret-r")
    g.add("block-run", "rblock-d0")


# -- the answer table, from the JSON Schema ---------------------------------------------------
def _value(g: _Rules, schema: Any, where: str) -> str:
    """The rule for one answer value of `schema` (at `where`); one rule per distinct sub-schema."""
    if not isinstance(schema, dict):
        return "expr"
    key = "value:" + json.dumps(schema, sort_keys=True)
    if key not in g.memo:
        g.memo[key] = _new_value(g, schema, where)
    return g.memo[key]


def _new_value(g: _Rules, schema: dict[str, Any], where: str) -> str:
    choices = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if isinstance(choices, list) and choices and all(isinstance(c, str) for c in choices):
        return g.add(g.fresh(where), " | ".join([*(_literal(c) for c in choices), "v-ref"]))
    kind = schema.get("type")
    if kind == "string":
        return "v-str"
    if kind in ("number", "integer"):
        return "v-num"
    if kind == "boolean":
        return "v-bool"
    if kind == "array":
        items_schema = schema.get("items")
        # Objects in a list are written out: `files = {"a.py"}` or `{path}` is the mistake to prevent.
        if is_edit_item(items_schema) and g.olds():
            item = _anchored_edit_item(g, where + "-item")
        elif isinstance(items_schema, dict) and _has_properties(items_schema):
            item = _object(g, items_schema, where + "-item")
        else:
            item = _value(g, items_schema, where + "-item")
        more = schema.get("maxItems")
        repeat = f"{{0,{more - 1}}}" if isinstance(more, int) and more >= 1 else "*"
        items = f"{item} (ws fsep ws {item}){repeat} (ws fsep)? ws"
        literal = f'"{{" ws {items} "}}"' if schema.get("minItems", 0) >= 1 else f'"{{" ws ({items})? "}}"'
        return g.add(g.fresh(where), f"{literal} | v-ref")
    if kind == "object" and _has_properties(schema):
        return g.add(g.fresh(where), f"{_object(g, schema, where)} | v-ref")
    return "expr"


def _anchored_edit_item(g: _Rules, where: str) -> str:
    """`{path = P, old = <a copy of P's text>, new = ...}`, one variant per anchored file."""
    sep = "ws fsep ws"
    variants = [f'"{{" ws "path" ws "=" ws ({path}) {sep} "old" ws "=" ws {old} {sep} "new" ws "=" ws v-str '
                f'(ws fsep)? ws "}}"' for path, old in g.olds()]
    return g.add(g.fresh(where), " | ".join(variants))


def _literal(value: str | bool) -> str:
    """A Lua literal of `value` as GBNF alternatives (both quote styles for a string)."""
    if isinstance(value, bool):
        return _lit("true" if value else "false")
    return " | ".join(_lit(q + value.replace("\\", "\\\\").replace(q, "\\" + q) + q) for q in "\"'")


def _has_properties(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object" and bool(schema.get("properties"))


Cases = dict[Any, tuple[frozenset[str], dict[str, int]]]


def _conditions(schema: dict[str, Any]) -> tuple[str, Cases] | None:
    """`allOf: [{if: {properties: {K: {const: v}}}, then: {required, properties: {P: {minItems}}}}]`
    as (K, {each value of K: (keys it requires, minItems it sets)}); None for any other shape."""
    rules = schema.get("allOf")
    if not isinstance(rules, list) or not rules:
        return None
    key: str | None = None
    found: Cases = {}
    for rule in rules:
        cond, then = rule.get("if", {}), rule.get("then", {})
        props = cond.get("properties", {})
        if set(rule) != {"if", "then"} or len(props) != 1 or set(cond) - {"properties", "required"}:
            return None
        ((name, test),) = props.items()
        if set(test) != {"const"} or key not in (None, name) or set(then) - {"required", "properties"}:
            return None
        key = name
        mins = then.get("properties", {})
        if any(set(v) != {"minItems"} for v in mins.values()):
            return None
        required, counts = found.get(test["const"], (frozenset(), {}))
        found[test["const"]] = (required | set(then.get("required", [])),
                                {**counts, **{k: v["minItems"] for k, v in mins.items()}})
    prop = schema.get("properties", {}).get(key)
    if key is None or not isinstance(prop, dict):
        return None
    values = prop.get("enum", [True, False] if prop.get("type") == "boolean" else None)
    if not isinstance(values, list) or not all(isinstance(v, (str, bool)) for v in values) or set(found) - set(values):
        return None
    return key, {v: found.get(v, (frozenset(), {})) for v in values}


def _object(g: _Rules, schema: dict[str, Any], where: str) -> str:
    key = "object:" + json.dumps(schema, sort_keys=True)
    if key not in g.memo:
        g.memo[key] = _new_object(g, schema, where)
    return g.memo[key]


def _new_object(g: _Rules, schema: dict[str, Any], where: str) -> str:
    """`{k = v, ...}`: the schema's keys in the schema's order, each required key present.

    `if K is v then require ...` (allOf) becomes one variant per literal value of K; a K computed at
    run time gets only the unconditional requirements. The validator judges everything else
    (lengths, ranges, patterns) and stays the final word.
    """
    props = dict(schema["properties"])
    required = set(schema.get("required", []))
    conditions = _conditions(schema)
    if conditions is None:
        fields = [(k, _value(g, v, f"{where}-{k}")) for k, v in props.items()]
        return _keys_in_order(g, fields, required, where)
    key, cases = conditions
    variants = []
    for value, (needs, min_items) in cases.items():
        tag = f"{where}-{str(value).lower()}"
        fields = [(k, g.add(g.fresh(f"{tag}-{k}"), _literal(value)) if k == key
                   else _value(g, {**v, "minItems": min_items[k]} if k in min_items else v, f"{tag}-{k}"))
                  for k, v in props.items()]
        variants.append(_keys_in_order(g, fields, required | needs, tag))
    fields = [(k, "v-ref" if k == key else _value(g, v, f"{where}-{k}")) for k, v in props.items()]
    variants.append(_keys_in_order(g, fields, required, f"{where}-computed"))
    return g.add(g.fresh(f"{where}-obj"), " | ".join(variants))


def _keys_in_order(g: _Rules, fields: list[tuple[str, str]], required: set[str], where: str) -> str:
    """`{k = <rule>, ...}` in the given order, required keys present, optional ones skippable, a
    trailing separator allowed (`members_in_order`)."""
    items = [f"{_lit(k)} ws \"=\" ws {rule}" for k, rule in fields]
    keys = [k for k, _ in fields]
    base = g.fresh(where + "-keys")
    head = members_in_order(g, base, items, keys, required, "ws fsep ws", trailing="ws fsep")
    body = g.add(base, f'"{{" ws ({head}) ws "}}"')
    if not required.intersection(keys):
        body = g.add(base + "-or-empty", f'{body} | "{{" ws "}}"')
    return body


# -- the chunk --------------------------------------------------------------------------------
def _chunk(g: _Rules) -> None:
    prose = g.add("prose", f'[^`\\n]{{1,{_PROSE_CHARS}}} "\\n"')
    # Exactly `function run(`: what find_lua_plan looks for in a bare chunk (a comment in between
    # would hide it), and no room for a run of spaces.
    g.add("rundef", '"function run(" ws name ws ")" block-run sp "end"')
    # Nothing before `run` but a comment: nothing that runs (a model otherwise writes its whole
    # program at the top level and never reaches `run`), no constants (a top-level `local x = ...`
    # marks a plan that has lost its way) and no helpers (models held to the grammar do not write
    # them; without them a call of a bare name is always a mistake, and the grammar can refuse it).
    g.add("chunk", "headcomment? ws rundef ws")
    g.add("root", f'{prose}{{0,{_PROSE_LINES}}} "\\n"{{0,2}} "```lua\\n" chunk "\\n```" | chunk')


def _answer_schema(role: str) -> dict[str, Any]:
    schema = json.loads((schema_dir() / "answers" / f"{role}.json").read_text())
    if not isinstance(schema, dict):
        raise ValueError(f"answer schema of {role} is not an object")
    return schema


@functools.lru_cache(maxsize=32)
def plan_grammar(role: str, tools: tuple[str, ...] | None = None, banned: frozenset[str] = frozenset(),
                 anchors: tuple[tuple[str, str], ...] = ()) -> str:
    """The GBNF grammar (llama.cpp's `grammar` field) for `role`'s Lua plans calling only `tools`.

    `tools=None` allows every tool; see `agent.plans.tools.plan_tools_for(role)`. `banned`: names a
    plan used without defining them (the lint's "unknown global"), never a variable again: the
    name's first word (see `_bans`), when it has `_BAN_PREFIX_MIN`+ characters, is no
    variable's beginning either (else `temperature` becomes `temperature_py`, and
    `require_path_or_file_or_glob_path_or_gz` loses or gains a letter: unknown too);
    a shorter one bans only the boundary after it (`io` and a capital) and the name itself. `anchors`: (path, text) of the files the prompt quoted
    whole; an edit of one copies its text exactly (edit_anchors), and edits name no other file.
    ValueError for an unknown role or tool.
    """
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r} (roles: {', '.join(ROLES)})")
    unknown = sorted(set(tools or ()) - set(TOOL_NAMES))
    if unknown:
        raise ValueError(f"unknown tool {unknown[0]!r} (tools: {', '.join(TOOL_NAMES)})")
    specs = [s for s in TOOL_SPECS if tools is None or s.name in tools]
    g = _Rules(dict(anchors))
    _chunk(g)
    answer = _object(g, _answer_schema(role), "answer")
    _statements(g, answer)
    _expressions(g, specs)
    starts: set[str] = set()
    wholes: set[str] = set()
    for name in banned:
        more, whole = _bans(name)
        starts |= more
        wholes |= whole
    _lexical(g, RESERVED_NAMES | wholes, frozenset(starts))
    return g.text()
