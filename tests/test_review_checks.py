"""The reviewer's `checks`: asked for before the verdict, and an approval with an unmet one is no approval.

The real reviewer runs as a subprocess against a scripted model; requests are read back from `--record`.
"""

from __future__ import annotations

import json
from pathlib import Path

from support import events, make_command

from agent.answers import asked_schema
from agent.protocol import schema_errors, validator

CART = ("class Cart:\n    def __init__(self):\n        self.items = {}\n\n    def remove(self, name, n=1):\n"
        "        self.items[name] -= n\n")
GOAL = {"goal": "remove(name, n=1) lowers the count and deletes the item at 0"}


def _review(status: str, checks: list[dict[str, object]] | None) -> str:
    answer: dict[str, object] = {"status": status, "summary": f"review: {status}", "findings": []}
    if checks is not None:
        answer = {"checks": checks, **answer}
    return json.dumps(answer)


def test_checks_are_asked_for_but_an_answer_without_them_stays_valid() -> None:
    schema = validator("answers/reviewer.json").schema
    sent = asked_schema(schema)
    assert sent["required"][0] == "checks" and "x-ask-for" not in sent
    assert "checks" not in schema["required"]  # recordings and plans without checks still validate
    assert not schema_errors("answers/reviewer.json", {"status": "approved", "summary": "ok", "findings": []})
    assert schema_errors("answers/reviewer.json", {"checks": [{"met": True}], "status": "approved",
                                                   "summary": "ok", "findings": []})  # a check needs its requirement


def test_an_approval_with_an_unmet_check_becomes_changes_requested(spawn, workspace: Path,
                                                                  tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B under real lorch approved, in 24 tokens, a remove() that never deletes an item
    (workspace / "cart.py").write_text(CART)
    checks = [{"requirement": "lowers the count", "path": "cart.py", "line": 6, "met": True},
              {"requirement": "deletes the item at 0", "path": "cart.py", "line": 6, "met": False},
              {"requirement": "an ungrounded one", "path": "nowhere.py", "line": 99, "met": False}]
    rec = tmp_path / "rec.jsonl"
    agent = spawn("reviewer", "--record", str(rec), replies=[_review("approved", checks)])
    out = agent.run(make_command("review", inputs=GOAL))
    done = events(out, "review.completed")[-1]
    assert done["status"] == "changes_requested"
    assert done["payload"]["findings"] == [{"path": "cart.py", "line": 6, "comment": "not met: deletes the item at 0"},
                                           {"path": "cart.py", "comment": "not met: an ungrounded one"}]
    assert done["payload"]["checks"] == checks
    review = json.loads((workspace / "reviews" / "T-0001.json").read_text())
    assert review["status"] == "changes_requested" and len(review["findings"]) == 2
    system = json.loads(rec.read_text().splitlines()[0])["request"]["messages"][0]["content"]
    assert '"required":["checks","status","summary","findings"]' in system and "First fill `checks`" in system


def test_met_checks_or_none_leave_the_approval_as_it_is(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "cart.py").write_text(CART)
    met = [{"requirement": "lowers the count", "path": "cart.py", "line": 6, "met": True}]
    agent = spawn("reviewer", replies=[_review("approved", met), _review("approved", None)])
    first = events(agent.run(make_command("review", inputs=GOAL)), "review.completed")[-1]
    assert first["status"] == "approved" and first["payload"]["checks"] == met
    (workspace / "cart.py").write_text(CART + "\n")  # a new round, not a replay
    second = events(agent.run(make_command("review", inputs=GOAL)), "review.completed")[-1]
    assert second["status"] == "approved" and second["payload"]["checks"] == []
