"""A long string that swallowed the rest of a plan is closed where the plan's code resumes."""

from __future__ import annotations

import pytest

from agent.errors import PlanInvalid
from agent.plans.lint import check_plan, syntax_check
from agent.plans.unclosed import close_swallowed_string, has_unclosed_bracket

# Qwen2.5-Coder-0.5B under real lorch (feature-cart, run gram3), shortened: no `]])` after the test file.
SWALLOWED = '''-- Example task: implement
function run(context)
  local w = tools.write("tests/test_cart.py", [[
from cart import Cart


def test_remove():
    cart = Cart()
    cart.remove("apple", 1)
    if cart.items:
        return None
  if w.error then error("write failed: " .. w.error) end
  return {summary = "Added a test"}
end
``

This Lua plan follows the structure of the task. The `tools` table also contains functions to log messages.'''


def _error(source: str) -> str:
    with pytest.raises(PlanInvalid) as info:
        syntax_check(source)
    return info.value.message


def test_the_string_is_closed_where_the_plans_code_resumes_and_prose_after_run_is_dropped() -> None:
    closed, line = close_swallowed_string(SWALLOWED, _error(SWALLOWED))  # type: ignore[misc]
    check_plan(closed)
    assert line == 12                                                     # the closing bracket's own line
    assert '        return None\n]])\n  if w.error then' in closed          # Python lines that read as Lua stay text
    assert closed.endswith('  return {summary = "Added a test"}\nend')
    assert closed.replace("]])\n", "", 1) in SWALLOWED                     # nothing the model wrote changed


@pytest.mark.parametrize(("opening", "closing", "after"), [
    ('  tools.write("a.txt", [=[', "]=])", ""),
    ('  local f = {path = "a.txt", content = [==[', "]==]}", "  tools.write(f.path, f.content)\n"),
])
def test_the_closing_bracket_matches_the_level_and_what_the_string_was_part_of(opening: str, closing: str,
                                                                               after: str) -> None:
    source = f"function run(context)\n{opening}\nline one\nline ]] two\n{after}  tools.progress('done')\n"
    source += "  return {summary = 'x'}\nend"
    result = close_swallowed_string(source, _error(source))
    assert result is not None
    check_plan(result[0])
    assert f"line ]] two\n{closing}\n{after}  tools.progress('done')" in result[0]


def test_nothing_is_made_up_when_no_cut_compiles_or_the_error_is_another() -> None:
    prose = "function run(context)\n  local w = tools.write('a.txt', [[\njust text\nmore text, never code again"
    assert close_swallowed_string(prose, _error(prose)) is None
    other = "function run(context)\n  local x = [1, 2]\n  return {summary = 'x'}\nend"
    assert close_swallowed_string(other, _error(other)) is None


def test_only_a_plan_with_an_unclosed_long_bracket_is_compiled_for_the_repair() -> None:
    assert has_unclosed_bracket(SWALLOWED)
    assert has_unclosed_bracket("local a = [==[ x ]] y")                  # a closing bracket of another level
    assert not has_unclosed_bracket("local a = [[x]] .. [=[y]]z]=] .. t[1]")
    assert not has_unclosed_bracket("function run(c)\n  return {summary = 'x'}\nend")
