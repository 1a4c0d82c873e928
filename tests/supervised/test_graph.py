"""Task-graph validation: every rule is a problem the model is told about, in its exact words."""

from __future__ import annotations

from typing import Any

import pytest

from agent.errors import TaskGraphInvalid
from agent.supervised.graph import parse_graph, ready_nodes, render_template, skip_downstream, validate_graph


def _validate(*nodes: dict[str, Any], skills: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    def check_path(path: str, write: bool) -> None:
        if path.startswith("/"):
            raise TaskGraphInvalid(f"{path} is outside")
    return validate_graph({"nodes": list(nodes)}, skill_exists=lambda n: n in skills, check_path=check_path,
                          max_retries=3)


def _problems(*nodes: dict[str, Any]) -> list[str]:
    with pytest.raises(TaskGraphInvalid) as err:
        _validate(*nodes)
    return list(err.value.details["problems"])


def llm(nid: str, *deps: str, template: str = "x") -> dict[str, Any]:
    return {"id": nid, "action": "llm_call", "depends_on": list(deps), "prompt_template": template}


def test_duplicate_ids_unknown_deps_and_cycles_are_named() -> None:
    assert _problems(llm("1"), llm("1")) == ["node 1: duplicate id"]
    assert _problems(llm("1", "9")) == ["node 1: depends_on '9' is not a node id"]
    assert _problems(llm("1", "2"), llm("2", "1"))[0].startswith("cycle: ")


def test_skills_must_exist_or_be_drafts_with_a_spec() -> None:
    problems = _problems({"id": "1", "action": "skill", "depends_on": [], "skill_name": "nope"})
    assert "not in skills/allowed/" in problems[0]
    assert _validate({"id": "1", "action": "skill", "depends_on": [], "skill_name": "nope",
                      "skill_source": "draft", "skill_spec": "count words"})[0]["skill_source"] == "draft"


def test_paths_are_checked_and_templates_may_only_name_earlier_nodes() -> None:
    assert "outside" in _problems({**llm("1"), "writes": ["/etc/passwd"]})[0]
    assert "does not run before it" in _problems(llm("1"), llm("2", template="{node_3_result}"), llm("3"))[0]


def test_a_decision_gates_its_branches_and_the_other_branch_is_skipped() -> None:
    nodes = _validate(llm("1"), {"id": "d", "action": "decision", "depends_on": ["1"], "condition": "ok?",
                                 "if_true": "2", "if_false": "3"}, llm("2"), llm("3"), llm("4", "3"))
    assert [n["id"] for n in ready_nodes(nodes)] == ["1"]
    nodes[0]["status"] = "complete"
    assert [n["id"] for n in ready_nodes(nodes)] == ["d"]
    nodes[4 - 1]["status"] = "skipped"
    assert skip_downstream(nodes, "3", "branch not taken") == ["4"]


def test_templates_share_the_prompt_budget() -> None:
    nodes = [{"id": "1", "result": "a" * 10_000}, {"id": "2", "result": {"k": 1}}]
    text = render_template("{node_1_result}|{node_2_result}", nodes, 1024)
    assert text.endswith('|{"k":1}') and "[truncated: 10000 bytes]" in text


def test_a_reply_without_json_is_a_graph_problem() -> None:
    with pytest.raises(TaskGraphInvalid):
        parse_graph("I would rather chat")
    assert parse_graph('Here:\n```json\n{"nodes": []}\n```')["nodes"] == []
