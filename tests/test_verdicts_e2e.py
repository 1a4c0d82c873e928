"""End-to-end: a verdict given on code the builder has since kept as it was is not asked for again.

lorch's loop after an approved review: update_spec → (changes requested) implement_changes → review
→ update_spec. A small model asked the same question again flips its verdict (Qwen2.5-Coder-0.5B:
approved, changes requested, approved … on the same file until the loop limit failed a run whose
tests passed). These tests drive the loop as lorch does, with real agent subprocesses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from support import events, make_command

CALC = "def add(a, b):\n    return a + b\n"
TESTS = "import calc\n\n\ndef test_add():\n    assert calc.add(2, 2) == 4\n"
SPEC = "# Spec\n\n## Behaviour\nadd(a, b) adds.\n\n## Status\nnot started\n\n## Open Questions\nNone yet.\n"
TEST_CMD = f"{sys.executable} -m pytest -q -p no:cacheprovider"
APPROVE = json.dumps({"status": "approved", "summary": "add adds", "findings": [{"path": "calc.py", "comment": "ok"}]})
INSIST = json.dumps({"status": "changes_requested", "summary": "no",
                     "findings": [{"path": "calc.py", "line": 1, "comment": "add must add"}]})
SPEC_ASKS = json.dumps({"status": "changes_requested", "summary": "add must add",
                        "required_changes": ["add(2, 2) == 4 as the goal says"]})
GIVEN_BACK = f"calc.py\n```python\n{CALC}```\n"


def _requests(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _setup(workspace: Path) -> None:
    (workspace / "test_calc.py").write_text(TESTS)
    (workspace / "SPEC.md").write_text(SPEC)


def _built(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    """The project set up and calc.py written by the builder (its receipts name the builder's files)."""
    _setup(workspace)
    builder = spawn("builder", "--test-command", TEST_CMD, replies=[GIVEN_BACK])
    assert events(builder.run(make_command("implement")), "builder.completed")[-1]["status"] == "success"


def test_a_loop_whose_builder_kept_the_code_ends_with_the_earlier_verdicts(spawn, workspace: Path,
                                                                             tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _setup(workspace)
    builder = spawn("builder", "--test-command", TEST_CMD, replies=[GIVEN_BACK] * 6)
    rev_rec, spec_rec = tmp_path / "review.jsonl", tmp_path / "spec.jsonl"
    # Were either asked again, it would answer the other way.
    reviewer = spawn("reviewer", "--test-command", TEST_CMD, "--record", str(rev_rec), replies=[APPROVE, INSIST])
    spec = spawn("spec_maintainer", "--record", str(spec_rec), replies=[SPEC_ASKS, SPEC_ASKS])
    assert events(builder.run(make_command("implement")), "builder.completed")[-1]["status"] == "success"
    assert events(reviewer.run(make_command("review")), "review.completed")[-1]["status"] == "approved"
    assert events(spec.run(make_command("update_spec")), "spec.changes_requested")
    kept = events(builder.run(make_command("implement_changes")), "builder.completed")[-1]
    assert kept["payload"]["tests"]["status"] == "pass" and (workspace / "calc.py").read_text() == CALC

    second = events(reviewer.run(make_command("review")), "review.completed")[-1]
    assert second["status"] == "approved" and second["payload"]["answer_via"] == "agent"
    assert second["payload"]["round"] == 2 and "Approved in round 1" in second["payload"]["summary"]
    assert json.loads((workspace / "reviews/T-0001.json").read_text())["status"] == "approved"
    assert _requests(rev_rec) == 1

    done = events(spec.run(make_command("update_spec")), "spec.updated")[-1]["payload"]
    assert done["answer_via"] == "agent" and done["edited_sections"] == ["Open Questions"]
    assert _requests(spec_rec) == 1
    text = (workspace / "SPEC.md").read_text()
    questions = text.split("## Open Questions", 1)[1]
    assert "None yet." in questions and "changes asked for in round 1 and not made" in questions
    assert "the builder kept the code; review approved" in questions
    assert "add(2, 2) == 4 as the goal says" in questions
    assert "## Behaviour\nadd(a, b) adds." in text  # nothing outside the allowed section moved
    notes = json.loads((workspace / "spec_notes/T-0001.json").read_text())
    assert notes["status"] == "updated" and notes["required_changes"] == []
    audit = (workspace / "logs/luallm-agent/audit.jsonl").read_text()
    assert '"approval_stands_on_same_code"' in audit and '"spec_request_not_repeated"' in audit


def test_changed_code_is_judged_again(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _setup(workspace)
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    fixed = f"calc.py\n```python\n{CALC}```\n"
    builder = spawn("builder", "--test-command", TEST_CMD, replies=[fixed])
    assert events(builder.run(make_command("implement")), "builder.completed")[-1]["status"] == "success"
    rec = tmp_path / "review.jsonl"
    reviewer = spawn("reviewer", "--test-command", TEST_CMD, "--record", str(rec), replies=[APPROVE, INSIST])
    assert events(reviewer.run(make_command("review")), "review.completed")[-1]["status"] == "approved"
    (workspace / "calc.py").write_text(CALC + "\n\ndef sub(a, b):\n    return a - b\n")
    again = events(reviewer.run(make_command("review")), "review.completed")[-1]
    assert again["status"] == "changes_requested" and again["payload"]["answer_via"] != "agent"
    assert _requests(rec) == 2


def test_each_rule_can_be_switched_off(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _built(spawn, workspace)
    reviewer = spawn("reviewer", "--test-command", TEST_CMD, "--disable-repair", "approval_stands_on_same_code",
                     replies=[APPROVE, INSIST])
    spec = spawn("spec_maintainer", "--disable-repair", "spec_request_not_repeated", replies=[SPEC_ASKS, SPEC_ASKS])
    for _ in range(2):
        assert events(reviewer.run(make_command("review")), "review.completed")
        assert events(spec.run(make_command("update_spec")), "spec.changes_requested")
    assert json.loads((workspace / "reviews/T-0001.json").read_text())["status"] == "changes_requested"


def test_a_new_run_of_the_same_task_asks_the_model(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # lorch gives each run its own idempotency keys; a verdict of an earlier run is not this loop's.
    _built(spawn, workspace)
    rec = tmp_path / "review.jsonl"
    reviewer = spawn("reviewer", "--test-command", TEST_CMD, "--record", str(rec), replies=[APPROVE, INSIST])
    assert events(reviewer.run(make_command("review")), "review.completed")[-1]["status"] == "approved"
    other_run = make_command("review", key="ik:" + "ab" * 32)
    assert events(reviewer.run(other_run), "review.completed")[-1]["status"] == "changes_requested"
    assert _requests(rec) == 2


def test_a_verdict_record_the_agent_did_not_write_is_ignored(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Where commands can write the agent's directory (Landlock alone), model-written code could plant
    # an approval; without the agent's MAC it is not obeyed.
    _built(spawn, workspace)
    rec = tmp_path / "review.jsonl"
    reviewer = spawn("reviewer", "--test-command", TEST_CMD, "--record", str(rec), replies=[INSIST, INSIST])
    assert events(reviewer.run(make_command("review")), "review.completed")[-1]["status"] == "changes_requested"
    path = workspace / "logs/luallm-agent/verdicts/T-0001-review.json"
    record = json.loads(path.read_text())
    assert record["status"] == "changes_requested" and record["mac"].startswith("hmac-sha256:")
    path.write_text(json.dumps({**record, "status": "approved"}))  # the old MAC no longer fits
    (workspace / "NOTES.md").write_text("not the builder's\n")  # a new workspace state: no replay of round 1
    again = events(reviewer.run(make_command("review")), "review.completed")[-1]
    assert again["status"] == "changes_requested" and _requests(rec) == 2
