"""The builder's JSON answer held by a grammar whose edits copy the quoted files."""

from __future__ import annotations

import json
import random
from pathlib import Path

import jsonschema
from gbnf_matcher import parse_gbnf
from support import events, make_command

from agent.answering.json_grammar import json_answer_grammar
from agent.resources import schema_dir

CART = ('class Cart:\n    def __init__(self):\n        self.items = {}\n\n'
        '    def add(self, name, price, quantity=1):\n        if quantity <= 0:\n'
        '            raise ValueError("quantity must be positive")\n        self.items[name] = [price, quantity]\n')


def _schema(role: str = "builder") -> str:
    return (schema_dir() / "answers" / f"{role}.json").read_text()


def test_what_the_grammar_allows_is_a_valid_answer_whose_edits_are_in_the_file() -> None:
    grammar = parse_gbnf(json_answer_grammar(_schema(), (("cart.py", CART),)) or "")
    schema = json.loads(_schema())
    rng = random.Random(5)
    edits = 0
    for _ in range(120):
        answer = json.loads(grammar.sample(rng, 'ab"\\\n\t', max_depth=60, max_chars=3000))
        jsonschema.validate(answer, schema)
        for edit in answer.get("edits", []):
            assert edit["path"] == "cart.py" and CART.count(edit["old"]) == 1, edit
            edits += 1
    assert edits > 10


def test_the_worked_examples_old_text_and_a_method_without_self_are_refused() -> None:
    # Qwen2.5-Coder-0.5B, default settings, feature-cart (runs V, W, W2, W3): `return "1.0"` (the
    # worked example's), then `add(name, price, quantity=1)`, in every run.
    grammar = parse_gbnf(json_answer_grammar(_schema(), (("cart.py", CART),)) or "")

    def answer(old: str) -> str:
        return json.dumps({"summary": "added remove", "edits": [{"path": "cart.py", "old": old, "new": "x"}]}, indent=2)

    assert grammar.accepts(answer("    def add(self, name, price, quantity=1):\n"))
    assert grammar.accepts(answer('raise ValueError("quantity must be positive")'))
    for wrong in ('return "1.0"', "    def add(name, price, quantity=1):", "def add(self, name, price, quantity=1):\n\n"):
        assert not grammar.accepts(answer(wrong)), wrong
    assert grammar.accepts(json.dumps({"summary": "new file", "files": [{"path": "b.py", "content": "x = 1\n"}]}))
    assert not grammar.accepts(json.dumps({"files": [], "summary": "the required key comes first"}))


def test_no_grammar_without_an_anchor_or_without_edits() -> None:
    assert json_answer_grammar(_schema(), ()) is None
    assert json_answer_grammar(_schema(), (("a.txt", "x\n" * 40),)) is None   # no line is unique
    assert json_answer_grammar(_schema("reviewer"), (("cart.py", CART),)) is None


def test_a_json_builder_edit_on_a_grammar_server_copies_the_file(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    from fake_openai import FakeOpenAI

    (workspace / "cart.py").write_text(CART)
    reply = json.dumps({"summary": "Added remove(name)", "edits": [{
        "path": "cart.py", "old": "        self.items[name] = [price, quantity]\n",
        "new": "        self.items[name] = [price, quantity]\n\n    def remove(self, name):\n        del self.items[name]\n"}]})
    fake = FakeOpenAI([reply])
    fake.props = {"build_info": "b1"}               # llama.cpp: takes a GBNF grammar
    with fake.running():
        agent = spawn("builder", "--base-url", fake.base_url, "--model", "fake-model", "--answers", "json")
        got = agent.run(make_command("implement", inputs={"goal": "Add remove(name) to the Cart class in cart.py."}))
    done = events(got, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["answer_via"] == "json"
    assert "def remove(self, name):" in (workspace / "cart.py").read_text()
    body = fake.requests[0]["body"]
    assert "response_format" not in body
    grammar = parse_gbnf(body["grammar"])
    assert grammar.accepts(reply) and not grammar.accepts(reply.replace('"        self.items[name]', '"    self.items[name]', 1))
    audit = [json.loads(x) for x in (workspace / "logs/luallm-agent/audit.jsonl").read_text().splitlines()]
    assert [a["json_grammar"] for a in audit if a["event"] == "answer_form"] == [True]


def test_a_json_grammar_generator_bug_leaves_the_schema_alone(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from role_context import Caps, FakeModelWithCaps

    from agent.answering import json_grammar
    from agent.answering.answer_form import json_form, with_json_grammar

    def broken(*_: object) -> str:
        raise RuntimeError("generator bug")

    form = json_form("test")
    server = FakeModelWithCaps([], caps=Caps(grammar=True))
    assert with_json_grammar(form, server, "builder", (("cart.py", CART),)).json_grammar  # as it works
    monkeypatch.setattr(json_grammar, "json_answer_grammar", broken)
    held = with_json_grammar(form, server, "builder", (("cart.py", CART),))
    assert held is form and held.json_grammar is None and held.schema
