"""End-to-end: each role through `luallm-agent stdio` with scripted model replies."""

import hashlib
import json
import os
import stat
import sys
import time
from pathlib import Path

import orjson
from support import events, fenced, lua_files, make_command

PY = sys.executable
CALC = '__all__ = ["add"]\n\ndef add(a, b):\n    return a + b\n'
TEST = ("import unittest\nimport calc\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(calc.add(1, 2), 3)\n")


def _sha(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def builder_answer(content: str = CALC, path: str = "calc.py", summary: str = "wrote calc") -> str:
    """The builder's reply: the file whole, as fenced text under its path."""
    return fenced((path, content), words=summary)


def setup_tests(ws: Path) -> None:
    (ws / "tests").mkdir(parents=True, exist_ok=True)
    (ws / "tests" / "__init__.py").write_text("")
    (ws / "tests" / "test_calc.py").write_text(TEST)


TEST_CMD = f"{PY} -m unittest discover -s tests"


# -- builder -------------------------------------------------------------------------------
def test_builder_writes_files_runs_tests_and_reports_pass(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    setup_tests(workspace)
    agent = spawn("builder", "--test-command", TEST_CMD, replies=[builder_answer()])
    got = agent.run(make_command("implement"))
    produced = events(got, "artifact.produced")
    done = events(got, "builder.completed")[-1]
    assert [e["event"] for e in events(got)][-1] == "builder.completed"
    assert produced[0]["artifacts"][0]["path"] == "calc.py"
    assert produced[0]["artifacts"][0]["sha256"] == _sha(workspace / "calc.py")
    assert stat.S_IMODE((workspace / "calc.py").stat().st_mode) == 0o600
    tests = done["payload"]["tests"]
    assert tests["status"] == "pass" and tests["total"] == 1 and tests["passed"] == 1
    assert done["artifacts"] == produced[0]["artifacts"]
    assert done["payload"]["usage"]["calls"] == 1
    assert (workspace / "receipts" / "T-0001" / "implement-1.json").is_file()


def test_builder_reports_real_test_failure(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    setup_tests(workspace)
    broken = CALC.replace("a + b", "a - b")
    agent = spawn("builder", "--builder-rounds", "1", "--test-command", TEST_CMD, replies=[builder_answer(broken)])
    tests = events(agent.run(make_command("implement")), "builder.completed")[-1]["payload"]["tests"]
    assert tests["status"] == "fail" and tests["failed"] == 1 and tests["total"] == 1


def test_builder_without_test_command_says_not_run(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", replies=[builder_answer()])
    tests = events(agent.run(make_command("implement")), "builder.completed")[-1]["payload"]["tests"]
    assert tests["status"] == "not_run" and "--test-command" in tests["summary"]


def test_escaping_path_costs_a_round_and_the_next_is_written(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", replies=[builder_answer(path="../evil.py"), builder_answer()])
    done = events(agent.run(make_command("implement")), "builder.completed")[-1]
    assert done["payload"]["files"] == ["calc.py"]
    assert [e["outcome"] for e in done["payload"]["round_log"]] == ["unusable", "written"]
    assert "escapes the workspace" in done["payload"]["round_log"][0]["why"]
    assert not (tmp_path / "evil.py").exists()


def test_replies_without_a_file_end_in_invalid_model_response(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", "--builder-rounds", "3", replies=["not a file at all", '{"files": []}', "```\n```"])
    got = agent.run(make_command("implement"))
    err = events(got, "error")[-1]["payload"]
    assert err["code"] == "invalid_model_response" and "no round produced a usable change" in err["message"]
    assert events(got, "builder.completed")[-1]["payload"]["tests"]["status"] == "fail"


def test_action_list_round_then_answer(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "notes.txt").write_text("remember the milk")
    actions = json.dumps({"reasoning": "look first", "actions": [{"tool": "read", "args": {"path": "notes.txt"}}]})
    review = json.dumps({"status": "approved", "summary": "read the notes", "findings": []})
    agent = spawn("reviewer", "--answers", "json", replies=[actions, review])
    done = events(agent.run(make_command("review")), "review.completed")[-1]
    assert done["status"] == "approved" and done["payload"]["summary"] == "read the notes"
    assert done["payload"]["usage"]["calls"] == 2


def test_hostile_task_id_never_leaves_the_workspace(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", replies=[builder_answer()])
    got = agent.run(make_command("implement", task_id="../../x"))
    assert events(got, "builder.completed")[-1]["task_id"] == "../../x"
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()
    receipts = list((workspace / "receipts").iterdir())
    assert len(receipts) == 1 and ".." not in receipts[0].name.split("/")


def test_required_expected_output_missing_fails(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", replies=[builder_answer()])
    got = agent.run(make_command("implement", expected_outputs=[{"path": "docs/missing.md", "required": True}]))
    assert events(got, "error")[-1]["payload"]["code"] == "artifact_write_failed"
    assert events(got, "builder.completed")[-1]["payload"]["tests"]["status"] == "fail"


def test_a_file_written_through_a_link_is_refused_as_path_rejected_whatever_the_door(spawn, workspace: Path,
                                                                                  tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "linkdir").symlink_to(outside)
    reply = "linkdir/x.py\n```python\nx = 1\n```\ncalc.py\n```python\ndef add(a, b):\n    return a + b\n```\n"
    agent = spawn("builder", "--answers", "text", replies=[reply])
    got = agent.run(make_command("implement", expected_outputs=[{"path": "linkdir/x.py", "required": True}]))
    err = events(got, "error")[-1]["payload"]
    assert err["code"] == "path_rejected" and "linkdir is a symbolic link" in err["message"]
    assert not (outside / "x.py").exists()


def test_optional_expected_output_missing_is_a_warning(spawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", replies=[builder_answer()])
    got = agent.run(make_command("implement", expected_outputs=[{"path": "docs/missing.md", "required": False}]))
    assert not events(got, "error")
    assert events(got, "builder.completed")[-1]["payload"]["files"] == ["calc.py"]


def test_oversize_payload_is_spilled_to_a_file(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    review = json.dumps({"status": "approved", "summary": "s" * 300_000, "findings": []})
    agent = spawn("reviewer", "--answers", "json", replies=[review])
    agent.send(make_command("review"))
    raw_before = len(agent.raw_lines)
    got = agent.until(lambda m: m.get("event") == "review.completed")
    assert all(len(line) <= 262_144 for line in agent.raw_lines[raw_before:])
    spilled = got[-1]["payload"]["spilled"]
    data = (workspace / spilled["path"]).read_bytes()
    assert "sha256:" + hashlib.sha256(data).hexdigest() == spilled["sha256"] and len(data) == spilled["size"]
    assert orjson.loads(data)["summary"] == "s" * 300_000
    assert got[-1]["status"] == "approved"


def test_eof_mid_command_exits_promptly_without_partial_files(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", "--test-command", "sleep 30", replies=[builder_answer()])
    agent.send(make_command("implement"))
    agent.until(lambda m: m.get("event") == "builder.progress")
    t0 = time.monotonic()
    agent.proc.stdin.close()
    assert agent.proc.wait(6) == 0
    assert time.monotonic() - t0 < 5
    leftovers = [p for p in workspace.rglob("*") if ".tmp." in p.name]
    assert leftovers == []


# -- reviewer ------------------------------------------------------------------------------
def review_answer(status: str = "approved") -> str:
    findings = [] if status == "approved" else [{"path": "calc.py", "line": 1, "comment": "export it"}]
    return json.dumps({"status": status, "summary": f"review: {status}", "findings": findings})


def test_reviewer_writes_review_file_and_top_level_status(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text(CALC)
    agent = spawn("reviewer", replies=[review_answer("changes_requested")])
    done = events(agent.run(make_command("review")), "review.completed")[-1]
    assert done["status"] == "changes_requested"
    review = json.loads((workspace / "reviews" / "T-0001.json").read_text())
    assert review["status"] == "changes_requested" and review["task_id"] == "T-0001"
    assert review["findings"][0]["comment"] == "export it" and review["created_at"].endswith("Z")


def test_identical_resend_is_replayed_without_the_model(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("reviewer", replies=[review_answer("approved")])  # one reply only
    cmd = make_command("review")
    first = agent.run(cmd)
    cmd2 = dict(cmd, message_id="another-message", retry={"attempt": 1, "max_attempts": 3})
    second = agent.run(cmd2)
    a, b = events(first, "review.completed")[-1], events(second, "review.completed")[-1]
    assert a["payload"] == b["payload"] and a["status"] == b["status"] == "approved"
    assert [e["artifacts"] for e in events(first, "artifact.produced")] == \
        [e["artifacts"] for e in events(second, "artifact.produced")]
    assert not events(second, "error")


def test_a_receipt_changed_from_outside_is_not_replayed_and_is_reported(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # What lorch would be told for a repeat is the receipt's terminal event: a forged one must never
    # reach it, even where the boundary could not keep the receipt out of a command's reach.
    (workspace / "calc.py").write_text(CALC)
    agent = spawn("reviewer", replies=[review_answer("changes_requested")] * 3)
    cmd = make_command("review")
    assert events(agent.run(cmd), "review.completed")[-1]["status"] == "changes_requested"
    receipt = workspace / "receipts" / "T-0001" / "review-1.json"
    data = json.loads(receipt.read_text())
    assert data["mac"].startswith("hmac-sha256:")
    data["terminal"]["status"] = "approved"       # the forger keeps the old MAC
    receipt.write_text(json.dumps(data))
    second = agent.run(dict(cmd, message_id="again"))
    assert events(second, "review.completed")[-1]["status"] == "changes_requested"  # asked the model again
    audit = [json.loads(line) for line in (workspace / "logs/luallm-agent/audit.jsonl").read_text().splitlines()]
    rejected = [a for a in audit if a["event"] == "receipt_rejected"]
    assert [r["receipt"] for r in rejected] == ["receipts/T-0001/review-1.json"]


def test_second_review_after_builder_change_is_not_replayed(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text(CALC)
    agent = spawn("reviewer", replies=[review_answer("changes_requested"), review_answer("approved")])
    cmd = make_command("review")
    assert events(agent.run(cmd), "review.completed")[-1]["status"] == "changes_requested"
    (workspace / "calc.py").write_text("changed by the builder")
    assert events(agent.run(cmd), "review.completed")[-1]["status"] == "approved"


def test_tampered_artifact_forces_a_fresh_run(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text(CALC)
    agent = spawn("reviewer", replies=[review_answer("changes_requested"), review_answer("approved")])
    cmd = make_command("review")
    agent.run(cmd)
    review = workspace / "reviews" / "T-0001.json"
    os.utime(review, (1, 1))
    review.write_text(review.read_text().replace("changes_requested", "approved"))
    assert events(agent.run(cmd), "review.completed")[-1]["status"] == "approved"


def test_secrets_never_leave_the_process(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    secret = "sk-live-0123456789abcdef"
    leaky = json.dumps({"status": "approved", "summary": f"the key is {secret}", "findings": []})
    agent = spawn("reviewer", replies=[leaky, review_answer("approved")], env={"MY_SERVICE_TOKEN": secret})
    cmd = make_command("review", inputs={"goal": f"use {secret}", "nested": {"db_password_SECRET": "hunter2hunter2"}})
    done = events(agent.run(cmd), "review.completed")[-1]
    agent.close()
    blobs = [b"".join(agent.raw_lines)]
    blobs += [p.read_bytes() for p in tmp_path.glob("stderr-*.txt")]
    blobs += [p.read_bytes() for p in workspace.rglob("*") if p.is_file()]
    for blob in blobs:
        assert secret.encode() not in blob
        assert b"hunter2hunter2" not in blob
    # The review file would have carried the secret: refused and repaired, never rewritten.
    assert done["payload"]["summary"] == "review: approved"
    audit = (workspace / "logs/luallm-agent/audit.jsonl").read_text()
    assert '"code":"secret_in_artifact"' in audit.replace(" ", "")


def test_secret_in_a_builder_summary_is_redacted_on_stdout(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    secret = "sk-live-0123456789abcdef"
    agent = spawn("builder", replies=[builder_answer(summary=f"used {secret}")], env={"MY_SERVICE_TOKEN": secret})
    got = agent.run(make_command("implement"))
    assert events(got, "builder.completed")[-1]["payload"]["summary"] == "used [REDACTED]"
    assert all(secret.encode() not in line for line in agent.raw_lines)


# -- spec maintainer -----------------------------------------------------------------------
SPEC = "# Spec\n\n## Behaviour\nadd only\n\n## Status\nold status\n\n## Changelog\n- 0.1\n"


def spec_answer(section: str, content: str = "new text") -> str:
    return json.dumps({"status": "updated", "summary": "updated",
                       "section_edits": [{"section": section, "content": content}]})


def test_forbidden_edit_is_repaired_and_only_allowed_sections_change(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text(SPEC)
    agent = spawn("spec_maintainer", replies=[spec_answer("Behaviour", "rewritten!"), spec_answer("## Status", "done")])
    got = agent.run(make_command("update_spec"))
    done = events(got, "spec.updated")[-1]
    assert done["payload"]["edited_sections"] == ["Status"]
    text = (workspace / "SPEC.md").read_text()
    assert "add only" in text and "rewritten!" not in text
    assert "## Status\n\ndone\n" in text and "old status" not in text and "## Changelog\n- 0.1" in text
    notes = json.loads((workspace / "spec_notes" / "T-0001.json").read_text())
    assert notes["edited_sections"] == ["Status"]


def test_persistent_forbidden_edit_is_dropped_and_the_run_goes_on(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text(SPEC)
    agent = spawn("spec_maintainer", replies=[spec_answer("Behaviour")] * 3)
    got = agent.run(make_command("update_spec"))
    # nothing of the answer was allowed: the agent records the Changelog entry, the rest stays as it was
    done = events(got, "spec.updated")[-1]
    assert not events(got, "error") and done["payload"]["edited_sections"] == ["Changelog"]
    assert done["payload"]["usage"]["calls"] == 2  # the same answer twice: no third identical question
    assert done["payload"]["answer_via"] == "agent" and "rewritten" not in (workspace / "SPEC.md").read_text()
    assert agent.proc.poll() is None  # still serving: no exit 3 over what the agent can resolve


def test_a_change_request_whose_edits_all_break_the_rules_sends_nothing_back(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text(SPEC)
    wrong = json.dumps({"status": "changes_requested", "summary": "Inputs updated", "required_changes": ["x holds"],
                        "section_edits": [{"section": "Inputs", "content": "x holds"}]})
    got = spawn("spec_maintainer", replies=[wrong] * 3).run(make_command("update_spec"))
    assert not events(got, "spec.changes_requested") and events(got, "spec.updated")[-1]["payload"]["answer_via"] == "agent"


def test_a_section_body_opening_with_its_own_heading_is_taken_without_it(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text(SPEC)
    answer = spec_answer("Changelog", "## Changelog\n- 0.1\n- 0.2: add (T-0001)")
    done = events(spawn("spec_maintainer", replies=[answer]).run(make_command("update_spec")), "spec.updated")[-1]
    assert done["payload"]["edited_sections"] == ["Changelog"] and done["payload"]["usage"]["calls"] == 1
    assert (workspace / "SPEC.md").read_text().endswith("## Changelog\n\n- 0.1\n- 0.2: add (T-0001)\n")
    # another heading inside a body is still refused
    bad = spec_answer("Changelog", "- 0.2\n## Status\nall done")
    got = spawn("spec_maintainer", workspace=workspace, replies=[bad] * 3).run(make_command("update_spec", task_id="T-0002"))
    assert "all done" not in (workspace / "SPEC.md").read_text() and events(got, "spec.updated")


def test_a_heading_of_a_bodys_own_is_put_under_its_section_in_one_call(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text(SPEC)
    answer = spec_answer("Changelog", "## Changes\n- 0.2: add (T-0001)")
    done = events(spawn("spec_maintainer", replies=[answer]).run(make_command("update_spec")), "spec.updated")[-1]
    assert done["payload"]["edited_sections"] == ["Changelog"] and done["payload"]["usage"]["calls"] == 1
    text = (workspace / "SPEC.md").read_text()
    assert text.endswith("## Changelog\n\n### Changes\n- 0.2: add (T-0001)\n") and "add only" in text


def test_an_answer_naming_a_section_outside_the_four_is_refused_whole(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # The answer schema names the four sections (a server that enforces it lets no other through); an
    # answer that names another breaks the schema, so none of its edits is applied.
    (workspace / "SPEC.md").write_text(SPEC)
    mixed = json.dumps({"status": "updated", "summary": "both", "section_edits": [
        {"section": "Behaviour", "content": "rewritten!"}, {"section": "Status", "content": "done"}]})
    agent = spawn("spec_maintainer", replies=[mixed] * 3)
    done = events(agent.run(make_command("update_spec")), "spec.updated")[-1]
    assert done["payload"]["edited_sections"] == ["Changelog"] and done["payload"]["answer_via"] == "agent"
    text = (workspace / "SPEC.md").read_text()
    assert "add only" in text and "rewritten!" not in text and "old status" in text


def test_no_usable_spec_answer_ends_in_a_changelog_entry_the_agent_records(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text(SPEC)
    (workspace / "reviews").mkdir()
    (workspace / "reviews" / "T-0001.json").write_text(json.dumps({"status": "approved", "findings": []}))
    cut_off = '{"status": "updated", "summary": "done", "section_edits": [{"section": "Changelog", "content": "- T-001'
    agent = spawn("spec_maintainer", replies=[cut_off] * 3)
    got = agent.run(make_command("update_spec"))
    done = events(got, "spec.updated")[-1]["payload"]
    assert not events(got, "error") and done["edited_sections"] == ["Changelog"] and done["answer_via"] == "agent"
    text = (workspace / "SPEC.md").read_text()
    assert "## Changelog\n\n- 0.1\n- T-0001: " in text and "review approved" in text
    assert "add only" in text and "old status" in text  # nothing but the Changelog changed
    notes = json.loads((workspace / "spec_notes" / "T-0001.json").read_text())
    assert notes["status"] == "updated" and notes["answer_via"] == "agent"
    audit = [json.loads(line) for line in (workspace / "logs" / "luallm-agent" / "audit.jsonl").read_text().splitlines()]
    assert any(a["event"] == "repair_applied" and a["name"] == "spec_changelog_by_agent" for a in audit)
    assert agent.proc.poll() is None  # still serving


def test_spec_changes_requested(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text(SPEC)
    answer = json.dumps({"status": "changes_requested", "summary": "missing docs", "required_changes": ["document add"]})
    done = events(spawn("spec_maintainer", replies=[answer]).run(make_command("update_spec")), "spec.changes_requested")[-1]
    assert done["payload"]["required_changes"] == ["document add"]


# -- orchestration -------------------------------------------------------------------------
def intake_inputs(**extra):  # type: ignore[no-untyped-def]
    return {"user_instruction": "build it", "discovery": {
        "root": "/abs/root", "strategy": "heuristic", "search_paths": ["."],
        "candidates": [{"path": "PLAN.md", "score": 0.9, "reason": "name", "headings": ["Plan"]},
                       {"path": "docs/other.md", "score": 0.5, "reason": "name", "headings": []}]}, **extra}


def orch(**answer) -> str:  # type: ignore[no-untyped-def]
    return json.dumps({"plan_file": "PLAN.md", "confidence": 0.8, "tasks": [], **answer})


def test_intake_clarification_then_new_inputs_run_afresh(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "PLAN.md").write_text("# Plan\n- one\n")
    agent = spawn("orchestration", replies=[
        orch(needs_clarification=True, questions=["Which one?"]),
        orch(tasks=[{"id": "T 1/../x", "title": "First", "files": ["a.py"]}, {"id": "T-2", "title": "Second", "files": []}]),
    ])
    key = "ik:" + "b" * 64
    first = agent.run(make_command("intake", task_id="intake-1", inputs=intake_inputs(), key=key))
    assert events(first, "orchestration.needs_clarification")[-1]["payload"]["questions"] == ["Which one?"]
    second = agent.run(make_command("intake", task_id="intake-1", key=key,
                                    inputs=intake_inputs(clarifications=[{"question": "Which one?", "answer": "one"}])))
    proposal = events(second, "orchestration.proposed_tasks")[-1]["payload"]
    assert proposal["plan_candidates"][0] == {"path": "PLAN.md", "confidence": 0.8, "reason": "chosen by the model"}
    ids = [t["id"] for t in proposal["derived_tasks"]]
    assert ids[1] == "T-2" and "/" not in ids[0] and " " not in ids[0]


def test_missing_plan_file_is_sent_back(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "PLAN.md").write_text("# Plan\n")
    agent = spawn("orchestration", replies=[orch(plan_file="NOPE.md"), orch()])
    got = agent.run(make_command("intake", inputs=intake_inputs()))
    assert events(got, "orchestration.proposed_tasks")


def test_plan_conflict_and_planning_artifact(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "PLAN.md").write_text("# Plan\n")
    agent = spawn("orchestration", replies=[orch(conflict={"candidates": ["PLAN.md", "docs/other.md"], "reason": "they disagree"})])
    got = agent.run(make_command("intake", inputs=intake_inputs(),
                                 expected_outputs=[{"path": "planning/proposal.json", "required": True}]))
    conflict = events(got, "orchestration.plan_conflict")[-1]["payload"]
    assert conflict["reason"] == "they disagree"
    saved = json.loads((workspace / "planning" / "proposal.json").read_text())
    assert saved["event"] == "orchestration.plan_conflict"
    assert (workspace / "PLAN.md").read_text() == "# Plan\n"


def test_candidates_over_budget_are_summarised_and_reported(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "PLAN.md").write_text("# Plan\n" + "line of plan text\n" * 5000)
    agent = spawn("orchestration", "--file-budget", "2048", replies=[orch()])
    got = agent.run(make_command("intake", inputs=intake_inputs()))
    cuts = events(got, "orchestration.proposed_tasks")[-1]["payload"]["prompt_cuts"]
    assert cuts[0]["path"] == "PLAN.md" and cuts[0]["kept"] <= 2048
    assert any(m.get("kind") == "log" and "budget" in m["message"] for m in got)


def test_resend_to_a_new_process_replays_without_any_model(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    first = spawn("reviewer", replies=[review_answer("approved")])
    cmd = make_command("review")
    a = events(first.run(cmd), "review.completed")[-1]
    first.close()
    second = spawn("reviewer")  # no model configured at all: only the receipt can answer
    b = events(second.run(cmd), "review.completed")[-1]
    assert a["payload"] == b["payload"] and b["status"] == "approved"


def test_plan_file_case_slip_is_accepted_without_a_repair(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "PLAN.md").write_text("# Plan\n")
    agent = spawn("orchestration", replies=[orch(plan_file="plan.md")])  # one reply: no repair possible
    got = agent.run(make_command("intake", inputs=intake_inputs()))
    assert events(got, "orchestration.proposed_tasks")[-1]["payload"]["plan_candidates"][0]["path"] == "PLAN.md"


def test_one_edit_without_its_list_is_taken_as_a_list_of_one(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # The 0.5B's spec plan (run gram24): `section_edits` as one object, three times, then exit 3.
    (workspace / "SPEC.md").write_text(SPEC)
    one = json.dumps({"status": "updated", "summary": "status recorded",
                      "section_edits": {"section": "Status", "content": "add and sub exist."}})
    agent = spawn("spec_maintainer", replies=[one])  # one reply: no repair round is needed
    done = events(agent.run(make_command("update_spec")), "spec.updated")[-1]
    assert done["payload"]["edited_sections"] == ["Status"]
    assert "## Status\n\nadd and sub exist.\n" in (workspace / "SPEC.md").read_text()
    assert b"taken as a list of one" in (tmp_path / "stderr-0.txt").read_bytes()
    assert b'"name":"mend_spec_answer"' in (tmp_path / "stderr-0.txt").read_bytes()


def test_without_mend_spec_answer_one_edit_outside_its_list_is_sent_back(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text(SPEC)
    edit = {"section": "Status", "content": "add and sub exist."}
    one = json.dumps({"status": "updated", "summary": "status recorded", "section_edits": edit})
    listed = json.dumps({"status": "updated", "summary": "status recorded", "section_edits": [edit]})
    agent = spawn("spec_maintainer", "--disable-repair", "mend_spec_answer", replies=[one, listed])
    done = events(agent.run(make_command("update_spec")), "spec.updated")[-1]
    assert done["payload"]["edited_sections"] == ["Status"]
    stderr = (tmp_path / "stderr-0.txt").read_bytes()
    assert b'"attempts":2' in stderr and b"taken as a list of one" not in stderr and b'"name":"mend_spec_answer"' not in stderr


def test_updated_without_edits_becomes_no_changes_needed(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text(SPEC)
    empty = json.dumps({"status": "updated", "summary": "updated"})
    agent = spawn("spec_maintainer", replies=[empty])  # one reply: no repair round is needed
    got = agent.run(make_command("update_spec"))
    done = events(got, "spec.no_changes_needed")[-1]
    assert done["payload"]["edited_sections"] == [] and not events(got, "error")
    assert json.loads((workspace / "spec_notes" / "T-0001.json").read_text())["status"] == "no_changes_needed"
    assert b"taken as no_changes_needed" in (tmp_path / "stderr-0.txt").read_bytes()
    assert (workspace / "SPEC.md").read_text() == SPEC


# -- one path policy, through the real agent -------------------------------------------------
BUILDER_TRICKS = [".git/hooks/pre-commit", "./.env", "src/../.git/config", "src/../receipts/T-0001/implement-1.json",
                  "to_receipts/implement-1.json", "reviews/T-0001.json", "logs/luallm-agent/audit.jsonl",
                  "a" * 300 + ".py", "../outside.py"]


def test_builder_replies_with_protected_paths_cost_their_round_and_nothing_is_written(  # type: ignore[no-untyped-def]
        spawn, workspace: Path, tmp_path: Path) -> None:
    for rel in (".git/hooks/pre-commit", ".env", ".git/config", "receipts/T-0001/implement-1.json", "reviews/T-0001.json"):
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text("original")
    (workspace / "to_receipts").symlink_to(workspace / "receipts" / "T-0001")
    # The Lua form names any path, dot-paths and over-long names included (the fenced form reads none of those).
    replies = [lua_files((p, "forged")) for p in BUILDER_TRICKS] + [lua_files(("calc.py", CALC))]
    agent = spawn("builder", "--answers", "lua", "--builder-rounds", str(len(BUILDER_TRICKS) + 1), replies=replies)
    done = events(agent.run(make_command("implement", task_id="T-0002")), "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["files"] == ["calc.py"]
    for rel in (".git/hooks/pre-commit", ".env", ".git/config", "receipts/T-0001/implement-1.json", "reviews/T-0001.json"):
        assert (workspace / rel).read_text() == "original", rel
    assert not (tmp_path / "outside.py").exists()
    log = done["payload"]["round_log"]
    assert [e["outcome"] for e in log] == ["unusable"] * len(BUILDER_TRICKS) + ["written"]
    refused = [e["why"] for e in log[:-1]]
    assert sum("may not write" in why or "protected" in why for why in refused) >= 5, refused
    assert any("is a symbolic link" in why for why in refused)
    assert any("escapes the workspace" in why for why in refused)


def test_a_protected_path_that_is_never_repaired_fails_and_is_not_written(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", "--answers", "lua", "--builder-rounds", "3", replies=[lua_files((".env", "X=1\n"))] * 3)
    got = agent.run(make_command("implement"))
    err = events(got, "error")[-1]["payload"]
    assert err["code"] == "invalid_model_response" and ".env" in err["message"]
    assert events(got, "builder.completed")[-1]["status"] == "failed"
    assert not (workspace / ".env").exists()


def test_intake_never_writes_plan_or_spec_files_through_expected_outputs(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "PLAN.md").write_text("# Plan\n")
    (workspace / "SPEC.md").write_text("# Spec\n")
    outputs = [{"path": p, "required": False} for p in
               ("./PLAN.md", "docs/../PLAN.md", "plan.md", "SPEC.md", "docs/other.md", ".lorch/x.json", "receipts/x.json")]
    agent = spawn("orchestration", replies=[orch()])
    got = agent.run(make_command("intake", inputs=intake_inputs(),
                                 expected_outputs=[*outputs, {"path": "./planning/proposal.json", "required": True}]))
    assert events(got, "orchestration.proposed_tasks") and not events(got, "error")
    assert (workspace / "PLAN.md").read_text() == "# Plan\n" and (workspace / "SPEC.md").read_text() == "# Spec\n"
    assert not (workspace / "docs").exists() and not (workspace / ".lorch").exists() and not (workspace / "receipts/x.json").exists()
    assert json.loads((workspace / "planning/proposal.json").read_text())["event"] == "orchestration.proposed_tasks"
    warned = [m for m in got if m.get("kind") == "log" and m.get("message") == "optional output not written"]
    assert len(warned) == len(outputs)


def test_intake_required_plan_file_output_fails_with_path_rejected(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "PLAN.md").write_text("# Plan\n")
    agent = spawn("orchestration", replies=[orch()])
    got = agent.run(make_command("intake", inputs=intake_inputs(), expected_outputs=[{"path": "./PLAN.md"}]))
    err = events(got, "error")[-1]["payload"]
    assert err["code"] == "path_rejected" and "./PLAN.md" in err["message"]
    assert (workspace / "PLAN.md").read_text() == "# Plan\n"


# -- modes and secrets ----------------------------------------------------------------------
def test_builder_answer_keeps_modes_of_rewritten_files(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "run.sh").write_text("#!/bin/sh\necho old\n")
    (workspace / "run.sh").chmod(0o755)
    (workspace / "mod.py").write_text("X = 1\n")
    (workspace / "mod.py").chmod(0o644)
    answer = fenced(("run.sh", "#!/bin/sh\necho new\n"), ("mod.py", "X = 2\n"), ("new.py", "Y = 1\n"), words="rewrote")
    agent = spawn("builder", replies=[answer])
    agent.run(make_command("implement"))
    assert (workspace / "run.sh").read_text().endswith("echo new\n")
    assert stat.S_IMODE((workspace / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((workspace / "mod.py").stat().st_mode) == 0o644
    assert stat.S_IMODE((workspace / "new.py").stat().st_mode) == 0o600


def test_builder_reply_with_a_secret_costs_its_round_and_the_next_is_written_exactly(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    secret = "sk-live-0123456789abcdef"
    exact = "import os\n\ndef key():\n    return os.environ['MY_SERVICE_TOKEN']  # return x + 1\n"
    agent = spawn("builder", replies=[builder_answer(content=f"KEY = '{secret}'\n", path="cfg.py"),
                                      builder_answer(content=exact, path="cfg.py")],
                  env={"MY_SERVICE_TOKEN": secret})
    done = events(agent.run(make_command("implement")), "builder.completed")[-1]
    assert done["payload"]["files"] == ["cfg.py"]
    assert (workspace / "cfg.py").read_text() == exact  # as asked: nothing rewritten
    assert [e["outcome"] for e in done["payload"]["round_log"]] == ["unusable", "written"]
    assert "secret" in done["payload"]["round_log"][0]["why"]
    audit = (workspace / "logs/luallm-agent/audit.jsonl").read_text()
    assert "reply_unusable" in audit and secret not in audit


def test_a_spilled_intake_keeps_the_fields_lorchs_schema_needs(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "PLAN.md").write_text("# Plan\n- one\n")
    answer = json.dumps({"plan_file": "PLAN.md", "confidence": 0.8, "notes": "n" * 300_000,
                         "tasks": [{"id": "T1", "title": "do one", "files": ["a.py"]}]})
    agent = spawn("orchestration", "--answers", "json", replies=[answer])
    got = agent.run(make_command("intake", inputs={"user_instruction": "plan it"}))  # every line schema-checked
    payload = events(got, "orchestration.proposed_tasks")[-1]["payload"]
    assert payload["plan_candidates"][0]["path"] == "PLAN.md"
    assert payload["derived_tasks"] == [{"id": "T1", "title": "do one", "files": ["a.py"]}]
    assert payload["notes"].startswith("n" * 100) and len(payload["notes"]) < 3000
    assert orjson.loads((workspace / payload["spilled"]["path"]).read_bytes())["notes"] == "n" * 300_000
