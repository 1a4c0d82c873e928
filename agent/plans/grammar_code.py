"""The plan grammar's Lua code: expressions and statements of the subset a plan may write.

The library is reached only through `tools.<allowed tool>`, allow-listed library functions and
builtins; every `return` in `run` is the answer rule (`grammar_answer`).
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
        opts = g.add(f"{base}-opts", f'"{{" ws ({key} (ws fsep ws {key})* (ws fsep)? ws)? "}}"')
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
        forms.append(g.add(f"{base}-named", f'"{{" ws {key} (ws fsep ws {key})* (ws fsep)? ws "}}"'))
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
    g.add("acc", '"." ident | "[" ws exprnl ws "]"')
    g.add("meth", f'":" {_alt([_lit(f) for f in STRING_FUNCTIONS])} args')
    g.add("pt", '"" | (args | meth | acc) pt')
    g.add("pexp", f'(name | "(" ws expr ws ")" | libcall) pt | "math." {_alt([_lit(c) for c in MATH_CONSTANTS])}')
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
    # An operand, then binary operators each with its operand.
    symops = _alt([_lit(o) for o in ["+", "*", "/", "//", "%", "^", "==", "~=", "<=", ">=", "<", ">"]])
    g.add("expr", "unit-n tail-n | unit-o tail-o")
    g.add("expr-nm", "unit-n-nm tail-n | unit-o-nm tail-o")   # right after a binary `-`: `a--b` is a comment
    g.add("binop", f'ws {symops} ws expr | ws "-" (sp expr | expr-nm) | sp ("and" | "or") sp expr')
    g.add("tail-n", '"" | sp ".." ws expr | binop')      # `1..x` would not lex
    g.add("tail-o", '"" | ws ".." ws expr | binop')
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
    g.add("local", '"local" sp namelist (ws "=" ws explist)?')
    # A call statement ends in a call, an assignment target in a field, index or bare name. Both
    # start with a name: one rule. States: after a call (cs-c, as-c), after anything else (cs-a, as-a).
    g.add("cs-c", '"" | (args | meth) cs-c | acc cs-a')
    g.add("cs-a", "(args | meth) cs-c | acc cs-a")
    g.add("as-a", '"" | (args | meth) as-c | acc as-a')
    g.add("as-c", "(args | meth) as-c | acc as-a")
    g.add("namestat", 'name (cs-a | as-a ws "=" ws expr)')
    g.add("iter", '("ipairs" | "pairs") ws "(" ws expr ws ")" | "string.gmatch" args | name ":gmatch" args')
    g.add("ret-r", f'"return" sp {answer}')
    for loop in (0, 1):                     # in a loop, `break` is a statement too
        stat, block = f"stat-{loop}", f"block-{loop}"
        alts = ["local", "namestat", "libcall cs-c",
                f'"if" sp expr sp "then" {block} (sp "elseif" sp expr sp "then" {block})* (sp "else" {block})? sp "end"',
                '"for" sp name ws "=" ws expr ws "," ws expr (ws "," ws expr)? sp "do" block-1 sp "end"',
                '"for" sp namelist sp "in" sp iter sp "do" block-1 sp "end"',
                '"while" sp expr sp "do" block-1 sp "end"',
                '"repeat" block-1 sp "until" sp expr']
        if loop:
            alts.append('"break"')
        g.add(stat, " | ".join(alts))
        g.add(block, f"(sp {stat})* (sp ret-r)?")
    # `run` ends in its answer, or in an `if` whose every branch (an `else` included) ends in one:
    # either way every path through `run` returns the answer.
    g.add("rif", '"if" sp expr sp "then" block-run (sp "elseif" sp expr sp "then" block-run)* sp "else" block-run sp "end"')
    g.add("block-run", "(sp stat-0)* sp (ret-r | rif)")
