"""Which form the model answers in (`--answers auto|plan|json`), per model, notes and server."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from role_context import Caps, FakeModel, FakeModelWithCaps

from agent.answering.answer_form import choose_form
from agent.models.config import parse_config
from agent.models.routing import RoutingModel
from agent.models.usage import UsageTracker


@pytest.fixture
def grammar_module(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """A stand-in for agent.plans.grammar (built by another work package): records its calls."""
    calls: list[tuple[str, Any]] = []
    module = types.ModuleType("agent.plans.grammar")

    def plan_grammar(role: str, tools: tuple[str, ...] | None) -> str:
        calls.append((role, tools))
        return f'root ::= "function run(context)" # {role}'

    module.plan_grammar = plan_grammar  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agent.plans.grammar", module)
    return calls


def test_explicit_settings_win() -> None:
    model = FakeModelWithCaps([], caps=Caps(grammar=True))
    assert choose_form("plan", model, "builder", "planning").name == "plan"
    json_form = choose_form("json", model, "builder", "planning")
    assert json_form.name == "json" and json_form.schema


def test_answers_grammar_holds_plans_to_the_grammar_where_the_server_takes_one(grammar_module) -> None:  # type: ignore[no-untyped-def]
    form = choose_form("grammar", UsageTracker(FakeModelWithCaps([], caps=Caps(grammar=True))), "reviewer", "review")
    assert form.name == "grammar" and form.grammar and "reviewer" in form.grammar and not form.schema
    free = choose_form("grammar", FakeModelWithCaps([], caps=Caps(grammar=False)), "builder", "planning")
    assert free.name == "plan" and free.grammar is None and "takes no GBNF grammar" in free.reason


def test_auto_without_known_capabilities_is_json_with_its_schema() -> None:
    form = choose_form("auto", FakeModel([]), "builder", "planning")
    assert form.name == "json" and form.schema and form.grammar is None


def test_auto_with_a_grammar_server_still_asks_for_json_unless_the_grammar_is_asked_for(grammar_module) -> None:  # type: ignore[no-untyped-def]
    model = UsageTracker(FakeModelWithCaps([], caps=Caps(grammar=True)))  # found through the wrappers
    form = choose_form("auto", model, "builder", "planning")
    assert form.name == "json" and form.schema and grammar_module == []
    other = choose_form("auto", model, "reviewer", "review")
    assert other.name == "json" and other.schema  # other roles: JSON held by the schema


def test_a_grammar_hint_on_a_grammar_server_gives_a_constrained_plan(grammar_module, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    from agent.answering import answer_form

    real = answer_form.model_hints
    monkeypatch.setattr(answer_form, "model_hints", lambda *a: dataclasses.replace(real(*a), answers="grammar"))
    model = UsageTracker(FakeModelWithCaps([], caps=Caps(grammar=True)))
    form = choose_form("auto", model, "builder", "planning")
    assert form.name == "grammar" and form.grammar and "builder" in form.grammar and not form.schema
    assert grammar_module == [("builder", None)]  # the builder may use every tool


def test_grammar_server_without_the_generator_falls_back_to_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agent.plans.grammar", None)  # import fails
    form = choose_form("auto", FakeModelWithCaps([], caps=Caps(grammar=True)), "builder", "planning")
    assert form.name == "json" and form.schema


def test_server_without_response_format_gets_plain_json() -> None:
    form = choose_form("auto", FakeModelWithCaps([], caps=Caps(json_schema=False)), "reviewer", "review")
    assert form.name == "json" and not form.schema


def test_capabilities_are_probed_once_per_client() -> None:
    model = FakeModelWithCaps([], caps=Caps())
    before = FakeModelWithCaps.probes
    for role, task in (("builder", "planning"), ("reviewer", "review"), ("builder", "planning")):
        choose_form("auto", UsageTracker(model), role, task)
    assert FakeModelWithCaps.probes - before == 1


def _router(provider: dict[str, Any]) -> RoutingModel:
    return RoutingModel(parse_config({"providers": {"p": {"base_url": "http://127.0.0.1:9/v1", "model": "m",
                                                          **provider}}}))


@pytest.mark.parametrize(("provider", "form"), [
    ({"answers": "plan"}, "plan"),
    ({"notes": "- answers: plan\n"}, "plan"),
    ({"notes": "avoid: json (it rambles)"}, "plan"),
    ({"answers": "json"}, "json"),
    ({}, "json"),
])
def test_config_and_notes_hints_choose_the_form(provider: dict[str, Any], form: str) -> None:
    assert choose_form("auto", UsageTracker(_router(provider)), "builder", "planning").name == form


def test_config_without_response_format_support_gets_plain_json() -> None:
    form = choose_form("auto", _router({"supports_json_schema": False}), "reviewer", "review")
    assert form.name == "json" and not form.schema


def test_grammar_hint_needs_a_server_that_takes_one(grammar_module) -> None:  # type: ignore[no-untyped-def]
    form = choose_form("auto", _router({"answers": "grammar"}), "builder", "planning")
    assert form.name == "json" and grammar_module == []  # no capability probe says "grammar": not sent
