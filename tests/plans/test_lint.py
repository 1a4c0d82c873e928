"""Pre-run checks: syntax without running, unknown globals and tools, forbidden names."""

from __future__ import annotations

import pytest

from agent.errors import PlanInvalid, SandboxViolation
from agent.plans import check_plan
from agent.plans.lint import tokenize

GOOD = '''
local M = {}
function M.helper(a, b) return a + b end
local function util(x, ...) return select("#", ...) end
counter = 0
function bump() counter = counter + 1 end
function run(context)
  local t <const> = {key = 1, ["os"] = 2, nested = {value = tools.read}}
  local obj = {}
  function obj:method() return self end
  local a, b = 1, 2
  g1, g2 = a, b
  for i, v in ipairs({}) do bump() end
  for i = 1, 3 do goto continue ::continue:: end
  local s = [[ os.execute ]] .. "io" -- os.exit() in a comment
  --[==[ debug.getinfo ]==]
  return {M.helper(1, 2), util(1), obj:method(), context.tools.list("."), tools:glob("*"), string.format("%d", 1)}
end
'''


def test_valid_plan_passes():
    check_plan(GOOD)


@pytest.mark.parametrize("src,message,line", [
    ("function run(c)\n  return x +\nend", "syntax error: unexpected symbol near 'end' (line 3)", 3),
    ("function run(c)\n  return undefined_thing\nend", "unknown global 'undefined_thing' (line 2)", 2),
    ("function run(c)\n\n  return tools.delete('x')\nend", "unknown tool 'tools.delete' (line 3)", 3),
    ("function run(c)\n  return c.tools.nope()\nend", None, None),
    ("function run(c)\n  return context.tools.nope()\nend", "unknown tool 'tools.nope' (line 2)", 2),
    ("local function run(c) end", "plan does not define function run(context)", 1),
    ("function main(c) end", "plan does not define function run(context)", 1),
    ("", "empty plan", None),
])
def test_invalid_plans_have_exact_messages(src, message, line):
    if message is None:  # a parameter named differently is not checked statically
        check_plan(src)
        return
    with pytest.raises(PlanInvalid) as exc:
        check_plan(src)
    assert message in exc.value.message
    assert exc.value.details.get("line") == line


@pytest.mark.parametrize("src,name,shown", [
    ("function run(c)\n  os.execute('ls')\nend", "os", "forbidden: os.execute (line 2)"),
    ("function run(c)\n  return string.dump(run)\nend", "string.dump", "forbidden: string.dump (line 2)"),
    ("function run(c)\n  return _ENV.require\nend", "require", "forbidden: require (line 2)"),
    ("function run(c)\n  return io['open']\nend", "io", "forbidden: io.open (line 2)"),
])
def test_forbidden_names_are_sandbox_violations(src, name, shown):
    with pytest.raises(SandboxViolation) as exc:
        check_plan(src)
    assert exc.value.details["name"] == name and exc.value.message == shown


def test_plan_may_shadow_forbidden_names_locally():
    check_plan("function run(c)\n  local os = {time = 1}\n  return os.time\nend")


def test_tokenizer_skips_strings_and_comments_and_counts_lines():
    toks = tokenize('a = "x\\"y" -- c\n--[[ multi\nline ]] b = [==[\n]]\n]==] c')
    names = [(t.value, t.line) for t in toks if t.kind == "name"]
    assert names == [("a", 1), ("b", 3), ("c", 5)]


def test_syntax_check_does_not_execute():
    # a plan whose top level would loop forever still checks instantly
    check_plan("while true do end\nfunction run(c) end")
