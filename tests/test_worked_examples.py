"""The worked examples (agent/roles/examples): one per role and action, valid in both forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.answering.conversation import first_messages, worked_example
from agent.plans import run_plan
from agent.plans.lint import check_plan
from agent.protocol import ROLE_ACTIONS, schema_errors
from agent.workspace import Workspace

EXAMPLES = Path(__file__).resolve().parent.parent / "agent" / "roles" / "examples"
PAIRS = [(role, action) for role, actions in ROLE_ACTIONS.items() for action in actions]
HELLO = 'def version():\n    return "1.0"\n'
GREETED = HELLO + '\n\ndef greet(name):\n    return f"Hello, {name}!"\n'


def _workspace(tmp_path: Path, role: str, action: str) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.py").write_text(GREETED if action in ("implement_changes", "review") else HELLO)
    (ws / "PLAN.md").write_text("# Plan\nT-1 add greet(name) to hello.py\n")
    return ws


@pytest.mark.parametrize(("role", "action"), PAIRS)
def test_every_role_and_action_has_both_forms(role: str, action: str) -> None:
    data = json.loads((EXAMPLES / f"{role}.{action}.json").read_text())
    assert data["task"].strip()
    assert schema_errors(f"answers/{role}.json", data["answer"]) == []
    check_plan((EXAMPLES / f"{role}.{action}.lua").read_text())  # compiles and passes the lint


@pytest.mark.parametrize(("role", "action"), PAIRS)
def test_the_lua_example_runs_and_returns_a_valid_answer(tmp_path: Path, role: str, action: str) -> None:
    ws = _workspace(tmp_path, role, action)
    source = (EXAMPLES / f"{role}.{action}.lua").read_text()
    context = {"role": role, "action": action, "task_id": "T-1", "inputs": {"goal": "greet", "discovery": {
        "candidates": [{"path": "PLAN.md", "score": 0.9}]}}, "expected_outputs": []}
    outcome = run_plan(source, context, workspace=Workspace(ws))
    assert schema_errors(f"answers/{role}.json", outcome.result) == []
    if role == "builder":
        assert "greet" in (ws / "hello.py").read_text() and outcome.artifacts
    if action == "implement_changes":
        assert "stranger" in (ws / "hello.py").read_text()


def test_the_example_is_an_earlier_exchange_of_the_first_prompt_in_the_form_asked_for() -> None:
    json_msgs = first_messages("builder", "implement", "json", "# Task T-9: implement")
    lua_msgs = first_messages("builder", "implement", "plan", "# Task T-9: implement")
    assert [m["role"] for m in json_msgs] == ["system", "user", "assistant", "user"]
    task, answer = worked_example("builder", "implement", "json")  # type: ignore[misc]
    assert json_msgs[1]["content"] == task and json_msgs[2]["content"] == answer
    assert json.loads(answer)["edits"][0]["path"] == "hello.py"
    assert lua_msgs[2]["content"].startswith("```lua\n") and "function run(context)" in lua_msgs[2]["content"]
    assert json_msgs[-1]["content"].startswith("# Task T-9: implement")
    assert json_msgs[-1]["content"].endswith("Reply now with the JSON answer for this task.")
    assert "tools.read(" not in json_msgs[0]["content"]  # the JSON form spends no tokens on the tool list
    assert "tools.read(" in lua_msgs[0]["content"]


@pytest.mark.parametrize(("role", "action"), PAIRS)
def test_the_lua_example_is_a_plan_the_grammar_allows(role: str, action: str) -> None:
    """A model held to the grammar can write what its worked example shows."""
    from gbnf_matcher import parse_gbnf

    from agent.plans.grammar import plan_grammar
    from agent.plans.tools import plan_tools_for

    _, answer = worked_example(role, action, "grammar")  # type: ignore[misc]
    assert parse_gbnf(plan_grammar(role, plan_tools_for(role))).failure(answer) is None
