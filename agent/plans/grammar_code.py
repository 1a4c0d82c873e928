"""The plan grammar's Lua code: expressions and statements of the subset a plan may write.

Calls are only of `tools.<allowed tool>`, allow-listed library functions and builtins (a bare
name is a value, never called: plans define no functions); operator chains, statements per block
and nesting depth are bounded so that a looping model is led to `run`'s `return`, whose table is
the answer rule (`grammar_answer`).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.plans.gbnf import alt as _alt
from agent.plans.gbnf import lit as _lit
from agent.plans.grammar_rules import PlanRules
from agent.plans.tools import ToolSpec

__all__ = ["expression_rules", "statement_rules", "STRING_FUNCTIONS", "TABLE_FUNCTIONS", "MATH_FUNCTIONS",
           "MATH_CONSTANTS", "BUILTIN_FUNCTIONS"]

# The library calls a plan may write (all present in the sandbox; a test checks that).
STRING_FUNCTIONS: tuple[str, ...] = ("byte", "char", "find", "format", "gmatch", "gsub", "len", "lower", "match",
                                     "rep", "reverse", "sub", "upper")
TABLE_FUNCTIONS: tuple[str, ...] = ("concat", "insert", "remove", "sort", "unpack")
MATH_FUNCTIONS: tuple[str, ...] = ("abs", "ceil", "floor", "fmod", "max", "min", "sqrt", "tointeger")
MATH_CONSTANTS: tuple[str, ...] = ("huge", "pi", "maxinteger", "mininteger")
BUILTIN_FUNCTIONS: tuple[str, ...] = ("assert", "error", "ipairs", "next", "pairs", "print", "select", "tonumber",
                                      "tostring", "type")

_WS_SAME_LINE = 8     # spaces or tabs before an assignment's `=`
_BLOCK_STATEMENTS = 40  # per block: a model repeating one line is made to reach its `return`
_OPERATORS = 16       # binary operators in one expression (nested parentheses start afresh)
_DEPTH = 5            # blocks nested in blocks (run's body is depth 0)


# -- expressions ------------------------------------------------------------------------------
def _tool_call(g: PlanRules, spec: ToolSpec) -> str:
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


def expression_rules(g: PlanRules, specs: Sequence[ToolSpec]) -> None:
    """Expressions, calls of the allowed `specs` and library functions, and typed answer values."""
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
def statement_rules(g: PlanRules, answer: str) -> None:
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

