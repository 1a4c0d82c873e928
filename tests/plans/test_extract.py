"""Recognising plans in model replies and the strict action list (seed 002)."""

from __future__ import annotations

import pytest

from agent.errors import PlanInvalid
from agent.plans import find_lua_plan, parse_action_list


def test_lua_fence():
    text = "Here is my plan:\n```lua\nfunction run(ctx)\n  return {}\nend\n```\nDone."
    assert find_lua_plan(text) == "function run(ctx)\n  return {}\nend"


@pytest.mark.parametrize("text", ['{"summary": "function run(x)"}', "just prose", "```json\n{}\n```", "```python\ndef run(): pass\n```"])
def test_not_a_plan(text):
    assert find_lua_plan(text) is None


def test_action_list_ok():
    acts = parse_action_list({"reasoning": "r", "actions": [{"tool": "read_file", "args": {"path": "a"}}]})
    assert acts == [{"tool": "read_file", "args": {"path": "a"}}]
    assert parse_action_list('{"actions": []}') == []


@pytest.mark.parametrize("obj", [{"summary": "x"}, [1], "not json", {"actions": [{"name": "x"}]}])
def test_not_an_action_list(obj):
    assert parse_action_list(obj) is None


@pytest.mark.parametrize("obj,fragment", [
    ({"actions": [], "extra": 1}, "unexpected field 'extra'"),
    ({"actions": [{"tool": "read", "args": {}, "why": "x"}]}, "actions[0] has unexpected field 'why'"),
    ({"actions": [{"tool": "read"}]}, "actions[0] is missing 'args'"),
    ({"actions": [{"tool": "read", "args": []}]}, "actions[0].args must be an object"),
    ({"actions": [{"tool": "", "args": {}}]}, "non-empty string"),
    ({"actions": "read"}, "'actions' must be an array"),
    ({"reasoning": 5, "actions": []}, "'reasoning' must be a string"),
])
def test_strict_action_list_rejections(obj, fragment):
    with pytest.raises(PlanInvalid) as exc:
        parse_action_list(obj)
    assert fragment in exc.value.message
