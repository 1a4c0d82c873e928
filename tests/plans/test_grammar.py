"""The GBNF grammar of Lua plans (agent/plans/grammar.py), checked by reading its text.

`gbnf_matcher` parses the grammar text the way llama.cpp's engine runs it (stacks, tail calls),
so "accepted" here means "a server constrained by this grammar could have produced it". Proofs:
good plans (the demo fixtures', the end-to-end tests', richer ones) are accepted; Python-isms,
forbidden names, unknown tools and wrongly shaped answers are rejected, each inside an otherwise
accepted plan; random texts sampled from the grammar always compile in Lua 5.4.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from gbnf_matcher import Grammar, parse_gbnf

from agent.errors import PlanInvalid, SandboxViolation
from agent.plans import grammar as grammar_module
from agent.plans.extract import find_lua_plan
from agent.plans.grammar import (
    BUILTIN_FUNCTIONS,
    MATH_CONSTANTS,
    MATH_FUNCTIONS,
    RESERVED_NAMES,
    STRING_FUNCTIONS,
    TABLE_FUNCTIONS,
    plan_grammar,
)
from agent.plans.lint import ALLOWED_GLOBALS, KEYWORDS, check_plan, lint_plan
from agent.plans.tools import TOOL_SPECS, plan_tools_for
from agent.protocol import ROLES
from agent.resources import schema_dir

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def grammar(role: str) -> Grammar:
    return parse_gbnf(plan_grammar(role, plan_tools_for(role)))


@functools.cache
def _compiler() -> Any:
    from agent.plans.sandbox import new_runtime

    lua = new_runtime(max_memory=64 * 1024 * 1024)
    return lua.eval("function(src) local f, err = load(src, '=plan', 't', {}) "
                    "if not f then return false, err end return true, f end")


def lua_loads(source: str) -> bool:
    ok, _ = _compiler()(source.encode("utf-8"))
    return bool(ok)


def lua_value(expression: str) -> Any:
    """The value of a Lua expression, or None when `return <expression>` does not compile."""
    ok, fn = _compiler()(f"return {expression}".encode())
    return fn() if ok else None


def fenced(body: str) -> str:
    return f"```lua\n{body}\n```"


# -- good plans -------------------------------------------------------------------------------
BUILDER_RICH = '''-- Add subtract, write its test, report both.
function run(context)
  local HEADER = "# generated"
  local files = {}
  local body = [==[
def subtract(a, b):
    """Return a - b; see [[docs]] and ]] too."""
    return a - b
]==]
  local existing = tools.read("calc.py", {max_bytes = 65536})
  if type(existing) == "table" and existing.error then
    tools.log("calc.py missing: " .. existing.error)
    existing = ""
  elseif #existing > 0 then
    tools.progress('calc.py has ' .. tostring(#existing) .. ' bytes')
  else
    existing = HEADER
  end
  for i, path in ipairs(context.workspace.files) do
    if path:match("%.py$") and not path:find("test", 1, true) then
      tools.progress(string.format("seen %s (%d)", path, i))
    end
  end
  local n = 0
  while n < 3 do
    n = n + 1
    if n == 2 then break end
  end
  for k = 1, 10, 2 do n = n - -k end
  local r = tools.edit("calc.py", "def add", body .. "\\ndef add", {replace_all = false})
  table.insert(files, {path = "tests/test_calc.py",
                       content = table.concat({"import calc", "", "def test_sub():", "    assert calc.subtract(3, 1) == 2"}, "\\n") .. "\\n"})
  files[#files + 1] = {path = "NOTES.md", content = [[
# Notes
Uses `calc.subtract` (see ``code``).
]]}
  return {summary = "added subtract (" .. #files .. " files, edit " .. tostring(r.replacements) .. ")",
          files = files}
end'''

BUILDER_INLINE = '''function run(context)
  return {
    summary = "wrote the module",
    files = {
      {path = "mod.py", content = [[def f():
    return {"a": [1, 2]}
]]},
      {path = 'README.md', content = "# mod\\n\\tan \\"example\\" \\x41\\u{e9}\\065\\n"};
    },
  }
end'''

REVIEWER_RICH = '''function run(context)
  local findings = {}
  local src = tools.read("calc.py")
  if type(src) ~= "string" then
    return {status = "changes_requested", summary = "calc.py is missing",
            findings = {{path = "calc.py", comment = "file not found"}}}
  end
  local line_no = 0
  for line in src:gmatch("[^\\n]*") do
    line_no = line_no + 1
    if line:find("TODO", 1, true) then
      findings[#findings + 1] = {path = "calc.py", line = line_no, comment = "unfinished: " .. line}
    end
  end
  local hits = tools.grep("def subtract", {globs = {"*.py"}, literal = true})
  local status = (#findings == 0 and #hits > 0) and "approved" or "changes_requested"
  return {status = status, summary = string.format("%d finding(s)", #findings), findings = findings}
end'''

# The plans of tests/test_plans_e2e.py that must work, as they are written there.
E2E = {
    "builder": '''function run(context)
  local r = tools.write("src/hello.txt", "hello " .. context.task_id)
  tools.progress("wrote hello")
  return {summary = "wrote " .. r.path}
end''',
    "spec_maintainer": '''function run(context)
  local spec = tools.read("SPEC.md")
  local done = string.find(spec, "old", 1, true) ~= nil
  return {status = "updated", summary = "status refreshed",
          section_edits = {{section = "Status", content = done and "refreshed" or "same"}}}
end''',
    "orchestration": '''function run(context)
  local c = context.inputs.discovery.candidates[1].path
  local text = tools.read(c)
  local id = string.match(text, "(T%-%d+)")
  return {plan_file = c, confidence = 0.75, tasks = {{id = id, title = "build the thing", files = {}}}}
end''',
    "reviewer": '''function run(context)
  local hits = tools.grep("def add", {globs = {"*.py"}})
  if #hits == 1 then return {status = "approved", summary = "add found", findings = {}} end
  return {status = "changes_requested", summary = "no add", findings = {{path = "calc.py", comment = "add it"}}}
end''',
}


def _demo_plans() -> list[tuple[str, str]]:
    """(role, reply) for every scripted demo reply that holds a Lua plan."""
    out = []
    for path in sorted((ROOT / "fixtures/demo/script").glob("*.json")):
        for reply in json.loads(path.read_text()):
            if find_lua_plan(reply) is not None:
                out.append((path.stem, reply))
    return out


GOOD = [
    *[pytest.param(role, reply, id=f"demo-{role}") for role, reply in _demo_plans()],
    *[pytest.param(role, fenced(plan), id=f"e2e-{role}") for role, plan in E2E.items()],
    pytest.param("builder", fenced(BUILDER_RICH), id="builder-rich"),
    pytest.param("builder", fenced(BUILDER_INLINE), id="builder-inline-files"),
    pytest.param("reviewer", fenced(REVIEWER_RICH), id="reviewer-rich"),
]


def test_the_demo_fixtures_hold_plans() -> None:
    assert {role for role, _ in _demo_plans()} == {"reviewer"}  # the builder writes files as text


@pytest.mark.parametrize(("role", "reply"), GOOD)
def test_good_plans_are_accepted(role: str, reply: str) -> None:
    source = find_lua_plan(reply)
    assert source is not None
    check_plan(source)                       # the corpus itself passes the real pre-checks
    failed_at = grammar(role).failure(reply)
    assert failed_at is None, reply[max(0, (failed_at or 0) - 80):(failed_at or 0) + 20]


# -- rejected: one line injected into a plan that is otherwise accepted -------------------------
TEMPLATE = 'function run(context)\n  local note = "ok"\n{line}\n  return {{summary = note}}\nend'
INJECTED = [
    ("python-list", "  local xs = [1, 2]"),
    ("json-object", '  local t = {"a": 1}'),
    ("json-object-single-quotes", "  local t = {'a': 1}"),
    ("unknown-tool", '  tools.nonexistent("x")'),
    ("unknown-tool-no-args", "  local r = tools.nonexistent()"),
    ("import", "  import os"),
    ("os-execute", '  os.execute("id")'),
    ("io-open", '  local f = io.open("x")'),
    ("require", '  local m = require("socket")'),
    ("load", '  local f = load("return 1")'),
    ("string-dump", "  local d = string.dump(run)"),
    ("G-os", "  local o = _G.os"),
    ("setmetatable", "  setmetatable({}, {})"),
    ("bare-tool-name", '  write("a.txt", "x")'),
    ("plus-equals", '  note += "!"'),
    ("not-equals", '  if note != "" then note = "x" end'),
    ("python-if", '  if note: note = "x"'),
    ("f-string", '  print(f"{note}")'),
    ("hash-comment", "  # a comment"),
    ("slash-comment", "  // a comment"),
    ("bang", "  local y = !note"),
    ("double-ampersand", "  local y = note && note"),
    ("python-for", "  for i in range(3): pass"),
    ("lambda", "  local f = lambda x: x"),
    ("anonymous-function", "  local f = function() end"),
    ("backslash-paren-escape", '  local i = string.find(note, "\\(")'),
    ("backslash-d-escape", '  local i = string.find(note, "\\d+")'),
    ("long-comment", "  --[[ block comment ]]"),
    ("goto", "  goto done"),
    ("triple-backtick-in-string", '  note = "```"'),
    ("keyword-as-name", "  local end = 1"),
    ("unclosed-string", '  note = "abc'),
    ("newline-in-string", '  note = "a\nb"'),
]


def test_template_alone_is_accepted() -> None:
    plan = TEMPLATE.format(line="  note = note .. '!'")
    check_plan(plan)
    assert grammar("builder").accepts(fenced(plan))


@pytest.mark.parametrize("line", [pytest.param(line, id=name) for name, line in INJECTED])
def test_python_isms_and_forbidden_names_are_rejected(line: str) -> None:
    assert not grammar("builder").accepts(fenced(TEMPLATE.format(line=line)))


@pytest.mark.parametrize(("role", "reply"), [
    pytest.param("builder", "def run(context):\n    return {\"summary\": \"x\"}\n", id="python-def"),
    pytest.param("builder", fenced("def run():\n    pass"), id="python-def-fenced"),
    pytest.param("builder", '{"summary": "x"}', id="json-answer"),
    pytest.param("builder", fenced('function run(context)\n  return {"summary": "x"}\nend'), id="json-keys"),
    pytest.param("builder", fenced("local function run(context)\n  return {summary = 'x'}\nend"), id="local-run"),
    pytest.param("builder", fenced("function run(context)\n  return {summary = 'x', extra = 1}\nend"),
                 id="unknown-answer-key"),
    pytest.param("builder", fenced("function run(context)\n  return {files = {}}\nend"), id="missing-summary"),
    pytest.param("builder", fenced("function run(context)\n  return {summary = 'x', files = {'calc.py'}}\nend"),
                 id="files-as-strings"),
    pytest.param("builder", fenced("function run(context)\n  local p = 'calc.py'\n  return {summary = 'x', files = {p}}\nend"),
                 id="files-as-a-variable-string"),
    pytest.param("builder", fenced("function run(context)\n  return {summary = {'x'}}\nend"), id="table-for-string"),
    pytest.param("builder", fenced("function run(context)\n  tools.progress('x')\nend"), id="no-return"),
    pytest.param("builder", fenced("function run(context)\n  local a = {summary = 'x'}\n  return a\nend"),
                 id="return-of-a-variable"),
    pytest.param("builder", "Sure!\n```lua\nfunction run(context)\n  return {summary = 'x'}\nend\n```\nDone.",
                 id="text-after-fence"),
    pytest.param("builder", fenced("local src = tools.read('a')\nfunction run(c)\n  return {summary = src}\nend"),
                 id="top-level-call"),
    pytest.param("builder", fenced("print('hi')\nfunction run(c)\n  return {summary = 'x'}\nend"),
                 id="top-level-statement"),
    pytest.param("builder", fenced("local input = 'a.py'\nfunction run(c)\n  return {summary = input}\nend"),
                 id="top-level-constant"),
    pytest.param("builder", fenced("function run(c)\n  return {summary = 'x'}\nend\nrun({})"), id="code-after-run"),
    # No helper functions.
    pytest.param("builder", fenced("local function helper(x)\n  return x\nend\nfunction run(c)\n"
                                   "  return {summary = helper('x')}\nend"), id="helper-function"),
    pytest.param("builder", fenced("function run(c)\n  local function helper(x) return x end\n"
                                   "  return {summary = 'x'}\nend"), id="local-helper-in-run"),
    pytest.param("reviewer", fenced("function run(c)\n  return {status = 'approve', summary = 'x', findings = {}}\nend"),
                 id="status-not-in-enum"),
    pytest.param("reviewer", fenced("function run(c)\n  tools.write('a', 'b')\n"
                                    "  return {status = 'approved', summary = 'x', findings = {}}\nend"),
                 id="write-in-read-only-role"),
    pytest.param("spec_maintainer", fenced(E2E["spec_maintainer"].replace(
        'local spec = tools.read("SPEC.md")', 'local spec = tools.edit("SPEC.md", "a", "b")')),
                 id="edit-in-read-only-role"),
])
def test_wrong_plans_are_rejected(role: str, reply: str) -> None:
    assert not grammar(role).accepts(reply)


CONDITIONAL = [
    # spec_maintainer: `updated` needs section edits, `changes_requested` needs required changes
    ("spec_maintainer", "status = 'updated', summary = 'x'", False),
    ("spec_maintainer", "status = 'updated', summary = 'x', section_edits = {}", False),
    ("spec_maintainer", "status = 'updated', summary = 'x', section_edits = {{section = 'Status', content = 'done'}}",
     True),
    ("spec_maintainer", "status = 'no_changes_needed', summary = 'x'", True),
    ("spec_maintainer", "status = 'changes_requested', summary = 'x'", False),
    ("spec_maintainer", "status = 'changes_requested', summary = 'x', required_changes = {'add a test'}", True),
    ("spec_maintainer", "status = s, summary = 'x'", True),        # computed: the validator decides
    # reviewer: changes requested means at least one finding
    ("reviewer", "status = 'changes_requested', summary = 'x', findings = {}", False),
    ("reviewer", "status = 'changes_requested', summary = 'x', findings = {{path = 'a.py', comment = 'c'}}", True),
    ("reviewer", "status = 'changes_requested', summary = 'x', findings = found", True),
    ("reviewer", "status = 'approved', summary = 'x', findings = {}", True),
    # orchestration: a clarification needs questions
    ("orchestration", "plan_file = 'PLAN.md', confidence = 0.4, tasks = {}, needs_clarification = true", False),
    ("orchestration", "plan_file = 'PLAN.md', confidence = 0.4, tasks = {}, needs_clarification = true, "
                      "questions = {'which first?'}", True),
    ("orchestration", "plan_file = 'PLAN.md', confidence = 0.4, tasks = {}, needs_clarification = false", True),
]


@pytest.mark.parametrize(("role", "fields", "accepted"), CONDITIONAL)
def test_conditional_requirements_of_the_schema_hold_for_literal_values(role: str, fields: str,
                                                                        accepted: bool) -> None:
    plan = f"function run(context)\n  local s, found = 'updated', {{}}\n  return {{{fields}}}\nend"
    assert grammar(role).accepts(fenced(plan)) is accepted


def test_answer_keys_follow_the_schema_order() -> None:
    """A fixed order keeps the grammar small (documented); the schema's order is the one accepted."""
    plan = "function run(c)\n  return {%s}\nend"
    keys = ["status = 'approved'", "summary = 'x'", "findings = {}"]
    assert grammar("reviewer").accepts(fenced(plan % ", ".join(keys)))
    assert not grammar("reviewer").accepts(fenced(plan % ", ".join(reversed(keys))))


# -- derived from the answer schema and the tool registry ---------------------------------------
def _lua_literal(schema: dict[str, Any], avoid: frozenset[Any] = frozenset()) -> str:
    """A Lua value of the schema's type, with only the required keys of objects; an enum or boolean
    value outside `avoid` (the values that an `allOf` condition names)."""
    if "enum" in schema:
        return json.dumps(next(v for v in schema["enum"] if v not in avoid))
    kind = schema.get("type")
    if kind == "boolean":
        return "true" if True not in avoid else "false"
    if kind == "object":
        required = schema.get("required", [])
        return "{" + ", ".join(f"{k} = {_lua_literal(schema['properties'][k])}" for k in required) + "}"
    if kind == "array":
        item = _lua_literal(schema["items"]) if "items" in schema else '"x"'
        return "{" + ", ".join([item] * schema.get("minItems", 0)) + "}"
    return {"string": '"x"', "number": "0.5", "integer": "1"}[str(kind)]


def _triggers(schema: dict[str, Any]) -> frozenset[Any]:
    return frozenset(test["const"] for rule in schema.get("allOf", [])
                     for test in rule["if"]["properties"].values())


def _minimal(schema: dict[str, Any], keys: list[str]) -> dict[str, str]:
    return {k: _lua_literal(schema["properties"][k], _triggers(schema)) for k in keys}


def _schema(role: str) -> dict[str, Any]:
    return dict(json.loads((schema_dir() / "answers" / f"{role}.json").read_text()))


@pytest.mark.parametrize("role", ROLES)
def test_answer_table_follows_the_role_schema(role: str) -> None:
    schema = _schema(role)
    required = schema["required"]
    fields = _minimal(schema, required)

    def plan(items: dict[str, str]) -> str:
        return "function run(context)\n  return {" + ", ".join(f"{k} = {v}" for k, v in items.items()) + "}\nend"

    g = grammar(role)
    assert g.accepts(fenced(plan(fields)))
    for key in required:
        assert not g.accepts(fenced(plan({k: v for k, v in fields.items() if k != key}))), f"{role} without {key}"
    assert not g.accepts(fenced(plan({**fields, "unexpected": '"x"'})))
    for key, prop in schema["properties"].items():      # every optional key is known too
        if key not in required:
            with_optional = _minimal(schema, [k for k in schema["properties"] if k in required or k == key])
            assert g.accepts(fenced(plan(with_optional))), f"{role} with {key}"
            if prop.get("type") == "array" and prop.get("items", {}).get("type") == "string":
                assert not g.accepts(fenced(plan({**with_optional, key: "{{a = 1}}"}))), f"{role}: {key} items are strings"


def _call(spec_name: str) -> str:
    spec = next(s for s in TOOL_SPECS if s.name == spec_name)
    return f"tools.{spec.name}(" + ", ".join(f'"{p}"' for p in spec.required) + ")"


@pytest.mark.parametrize("role", ROLES)
def test_only_the_roles_tools_are_callable(role: str) -> None:
    allowed = plan_tools_for(role)
    schema_answer = "{" + ", ".join(f"{k} = {v}" for k, v in _minimal(_schema(role), _schema(role)["required"]).items()) + "}"
    for spec in TOOL_SPECS:
        plan = f"function run(context)\n  local r = {_call(spec.name)}\n  return {schema_answer}\nend"
        expected = allowed is None or spec.name in allowed
        assert grammar(role).accepts(fenced(plan)) is expected, (role, spec.name)


@pytest.mark.parametrize(("call", "accepted"), [
    ('tools.write("a.txt", "body")', True),
    ('tools.write({path = "a.txt", content = "body"})', True),
    ('tools.write("a.txt")', False),                          # content is required
    ('tools.write("a.txt", "b", "c")', False),                # no third parameter
    ('tools.read("a.txt", {max_bytes = 10, line_range = {1, 5}})', True),
    ('tools.read("a.txt", {bogus = 1})', False),              # not one of read's options
    ('tools.read({"a.txt"})', False),                         # a table where the path belongs
    ('tools.list()', True),
    ('tools.list("src")', True),
    ('tools.edit("a", "old", "new", {replace_all = true})', True),
    ('tools.edit("a", "old")', False),
    ('tools.grep("x", {globs = {"*.py"}, max_results = 5})', True),
    ('tools.call_llm("q", {anything = 1, tag = "t"})', True),  # call_llm forwards any option
    ('tools.run("ls -la", {timeout_ms = 1000})', True),
    ('tools.read("a.txt"):upper()', True),
    ('tools.read("a.txt").error', False),                      # a statement must be a call
])
def test_tool_arguments_follow_the_registry(call: str, accepted: bool) -> None:
    plan = f"function run(context)\n  {call}\n  return {{summary = 'x'}}\nend"
    assert grammar("builder").accepts(fenced(plan)) is accepted


def test_reserved_names_are_never_variables() -> None:
    g = grammar("builder")
    for word in sorted(RESERVED_NAMES):
        assert not g.accepts(word, "name"), word
        assert g.accepts(word + "_1", "name"), word
        assert g.accepts("q" + word, "name"), word
    assert g.accepts("result", "name") and g.accepts("func", "name") and g.accepts("required", "name")
    for word in ("en", "endlua", "the", "els", "unti", "legend", "xend"):
        assert g.accepts(word, "name"), word
    for word in ("context", "files", "content", "path", "result", "ok", "i", "_", "Files", "src2"):
        assert g.accepts(word, "name"), word
    for word in KEYWORDS:                       # keys and fields may be any non-keyword
        assert not g.accepts(word, "ident")
    assert g.accepts("os", "ident") and g.accepts("tools", "ident")


def test_library_names_are_allowed_by_the_lint() -> None:
    assert set(BUILTIN_FUNCTIONS) <= ALLOWED_GLOBALS
    assert {"string", "table", "math"} <= ALLOWED_GLOBALS


def test_library_functions_exist_in_the_sandbox(run) -> None:  # type: ignore[no-untyped-def]
    def names(lib: str, items: tuple[str, ...]) -> str:
        return "{" + ", ".join(f'"{lib}.{n}"' for n in items) + "}"

    plan = f"""function run(ctx)
  local missing = {{}}
  local function check(lib, list, want)
    for _, full in ipairs(list) do
      local name = full:match("%.(.+)$")
      if type(lib[name]) ~= want then table.insert(missing, full) end
    end
  end
  check(string, {names("string", STRING_FUNCTIONS)}, "function")
  check(table, {names("table", TABLE_FUNCTIONS)}, "function")
  check(math, {names("math", MATH_FUNCTIONS)}, "function")
  check(math, {names("math", MATH_CONSTANTS)}, "number")
  check(_G, {names("_G", BUILTIN_FUNCTIONS)}, "function")
  return missing
end"""
    code, out = run(plan)
    assert code == "ok", out
    assert out.result == []


def test_grammar_is_cached_and_checks_its_arguments() -> None:
    assert plan_grammar("builder") is plan_grammar("builder")
    assert plan_grammar("reviewer", ("read",)) != plan_grammar("reviewer", ("read", "grep"))
    with pytest.raises(ValueError, match="unknown role"):
        plan_grammar("hacker")
    with pytest.raises(ValueError, match="unknown tool"):
        plan_grammar("builder", ("read", "shell"))


def test_no_tools_means_no_tool_calls() -> None:
    g = parse_gbnf(plan_grammar("builder", ()))
    assert g.accepts(fenced("function run(c)\n  return {summary = 'x'}\nend"))
    assert not g.accepts(fenced("function run(c)\n  return {summary = tools.read('a')}\nend"))


# -- lexical corner cases, exhaustively over small alphabets ------------------------------------
@pytest.mark.parametrize("level", [0, 1, 2])
def test_long_strings_hold_any_text_up_to_their_closing_bracket(level: int) -> None:
    """Accepted exactly when Lua reads the text back unchanged and it holds no ```."""
    g = grammar("builder")
    eq = "=" * level
    for n in range(6):
        for chars in itertools.product("]=a`\n", repeat=n):
            content = "".join(chars)
            text = f"[{eq}[{content}]{eq}]"
            value = lua_value(text)
            lua_reads_it = value is not None and value.decode() == content.removeprefix("\n")
            expected = lua_reads_it and "```" not in content
            assert g.accepts(text, "lstr") is expected, repr(text)


def test_short_string_escapes_are_luas_own() -> None:
    g = grammar("builder")
    for ch in map(chr, range(32, 127)):
        text = '"\\' + ch + '"'
        if g.accepts(text, "sstr"):
            assert lua_value(text) is not None, text
    for good in ('"\\n\\t\\\\\\""', "'\\''", '"\\x41"', '"\\065"', '"\\255"', '"\\u{1F600}"', '"a`b``c"'):
        assert g.accepts(good, "sstr") and lua_value(good) is not None, good
    for bad in ('"\\("', '"\\d"', '"\\256"', '"\\x4"', '"a```"', '"\\', '"a\nb"', '"a\rb"'):
        assert not g.accepts(bad, "sstr"), bad


@pytest.mark.parametrize(("text", "accepted"), [
    ("a - -b", True), ("a --b", False), ("a-- b", False), ("a -(-b)", True), ("a-b", True), ("-1", True), ("- -1", False), ("-#t", True),
    ("1 .. x", True), ("1..x", False), ("x..1", True), ("1.5 .. 'a'", True), ("0x1F .. ''", True),
    ("t[ [[x]] ]", False), ("t[1]", True), ("a and b", True), ("aandb", True),  # aandb is one name
    ("not x", True), ("notx", True), ("a ~= b", True), ("a != b", False), ("#t > 0", True),
    ("a.b:upper()", True), ("a:dump()", False), ("(x).y", True), ("t.end", False), ("t[1]:upper()", True),
    ("tostring(x)(y)", True), ("type(x).y", True), ("s:upper()", True),
])
def test_expressions_never_lex_differently(text: str, accepted: bool) -> None:
    """Exactly the token sequences that Lua reads the way the grammar means them."""
    g = grammar("builder")
    assert g.accepts(text, "expr") is accepted
    if accepted:
        assert lua_loads(f"local a, b, t, x, y, f = 1, 2, {{}}, 3, 4, print\nlocal v = {text}")


# -- random texts of the grammar compile ---------------------------------------------------------
POOL = "abcdefghijklmnopqrstuvwxyzEGT_019 \t\n\"'\\[]=-`.,;:(){}#~<>+*/%^éλ😀\r"


def _samples(role: str, count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [grammar(role).sample(rng, POOL, max_depth=28, max_chars=2500) for _ in range(count)]


@pytest.mark.parametrize("role", ROLES)
def test_every_sampled_text_is_a_plan_that_lua_compiles(role: str) -> None:
    for text in _samples(role, 40, seed=ROLES.index(role)):
        source = find_lua_plan(text)
        assert source is not None, text[:300]
        assert lua_loads(source), source
        try:
            lint_plan(source)                    # unknown names may remain; forbidden ones never
        except SandboxViolation as exc:
            raise AssertionError(f"{exc}: {source}") from None
        except PlanInvalid as exc:             # an undeclared name or tool: the lint's job, not the grammar's
            assert "unknown global" in str(exc) or "unknown tool" in str(exc), exc


def test_the_sampler_produces_what_the_matcher_accepts() -> None:
    for text in _samples("reviewer", 5, seed=11):
        assert grammar("reviewer").accepts(text)


@pytest.mark.slow
@pytest.mark.parametrize("role", ROLES)
def test_many_sampled_texts_compile(role: str) -> None:
    for text in _samples(role, 1500, seed=1000 + ROLES.index(role)):
        source = find_lua_plan(text)
        assert source is not None and lua_loads(source), text


def test_grammar_text_is_llama_cpp_friendly() -> None:
    """Rule names llama.cpp accepts, escapes it knows, a `root` rule, and a modest size."""
    for role in ROLES:
        text = plan_grammar(role, plan_tools_for(role))
        assert text.count("root ::=") == 1
        for line in text.splitlines():
            head = line.split(" ::= ", 1)[0]
            assert head.replace("-", "").isalnum(), head
        assert len(text) < 96_000
    assert set(grammar_module.__all__) == {"plan_grammar", "STRING_FUNCTIONS", "TABLE_FUNCTIONS", "MATH_FUNCTIONS",
                                           "MATH_CONSTANTS", "BUILTIN_FUNCTIONS", "RESERVED_NAMES"}


def test_lists_stop_at_max_items() -> None:
    g = grammar("builder")

    def plan(files: int) -> str:
        items = ", ".join("{path = 'a', content = ''}" for _ in range(files))
        return f"function run(c)\n  return {{summary = 'x', files = {{{items}}}}}\nend"

    assert g.accepts(fenced(plan(50)))
    assert not g.accepts(fenced(plan(51)))             # the builder schema's maxItems


def test_comments_hold_no_backtick() -> None:
    plan = "function run(c)\n  local n = 1\n  {comment}\n  return {{summary = 'x'}}\nend"
    assert grammar("builder").accepts(fenced(plan.format(comment="-- fine")))
    assert not grammar("builder").accepts(fenced(plan.format(comment="-- uses `x`")))   # "```" would end the fence


def test_run_may_end_in_an_if_whose_every_branch_answers() -> None:
    """`if ... then return A else return B end` returns the answer on every path, as a final `return` does."""
    g = grammar("reviewer")
    ok = "{status = 'approved', summary = 'ok', findings = {}}"
    no = "{status = 'changes_requested', summary = 'no', findings = {{path = 'a.py', comment = 'x'}}}"
    both = f"function run(c)\n  local s = tools.read('a.py')\n  if s then\n    return {ok}\n  else\n    return {no}\n  end\nend"
    chain = (f"function run(c)\n  if c then\n    if c.x then return {ok} else return {no} end\n"
             f"  elseif c.y then\n    return {no}\n  else\n    return {ok}\n  end\nend")
    for plan in (both, chain):
        check_plan(plan)
        assert g.accepts(fenced(plan)), plan
    no_else = f"function run(c)\n  if c then\n    return {ok}\n  end\nend"
    assert not g.accepts(fenced(no_else))                         # a path without an answer still needs one
    assert g.accepts(fenced(no_else.replace("  end\nend", f"  end\n  return {no}\nend")))
