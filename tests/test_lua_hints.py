"""Repair hints that name the Lua way for the Python-isms small models write."""

from __future__ import annotations

import pytest

from agent.errors import PlanError
from agent.plans.lint import check_plan
from agent.plans.lua_hints import lua_hints


def _error(src: str) -> str:
    try:
        check_plan(src)
    except PlanError as exc:
        return exc.message
    return ""


def plan(body: str) -> str:
    return f"function run(context)\n{body}\n  return {{summary = 'x'}}\nend"


@pytest.mark.parametrize(("body", "expected"), [
    ("  local t = [1, 2]", "{1, 2} for a list"),
    ("  return {files = [{path = 'a', content = 'b'}]}", "{1, 2} for a list"),
    ('  local t = {"a": 1}', 'not {"a": 1}'),
    ('  local m = string.match("f(x)", "\\(")', "%("),
    ("  local x = 1\n  if x == None then end", "Python"),
])
def test_python_isms_get_the_lua_way(body: str, expected: str) -> None:
    src = plan(body)
    message = _error(src)
    hints = lua_hints(src, message)
    assert any(expected in h for h in hints), (message, hints)


def test_a_backslash_pattern_that_compiles_still_gets_the_hint() -> None:
    src = plan('  local m = string.match(tools.read("a.py"), "def \\\\(.-\\\\)")')  # "\\(" compiles in Lua
    assert _error(src) == ""
    assert any("%(" in h for h in lua_hints(src, "malformed pattern (ends with '\\')"))
    assert any("%(" in h for h in lua_hints(src, ""))


def test_indexing_an_error_result_gets_the_check_first_hint() -> None:
    message = "plan.lua:3: attempt to index a nil value (field 'stdout')"
    assert any("r.error" in h for h in lua_hints(None, message))


def test_a_valid_plan_gets_no_hints() -> None:
    src = plan('  local t = {1, 2}\n  local m = {a = 1, ["b c"] = 2}\n  local s = string.find("a.b", "%.")')
    assert _error(src) == "" and lua_hints(src, "") == []
