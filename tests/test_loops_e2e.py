"""End-to-end: lorch's review and spec loops end, through real agent subprocesses.

lorch sends review ↔ implement_changes (and update_spec ↔ implement_changes) without any limit.
These tests drive the loop like lorch does, with a reviewer (spec maintainer) that always asks
for changes; the driver's own cap stands in for "forever": without the agent's bound the loop
would run into it.
"""

from __future__ import annotations

import json
from pathlib import Path

from support import events, make_command

CALC = '__all__ = ["add"]\n\n\ndef add(a, b):\n    return a + b\n'
FOREVER = 12  # lorch has no limit; this driver gives up here


def builder_answer(round_no: int) -> str:
    # each round changes what the code does (a change of comments alone is sent back)
    return json.dumps({"summary": f"round {round_no}", "edits": [
        {"path": "calc.py", "old": "    return a + b\n", "new": f"    return a + b\n\n\nROUND = {round_no}\n"}]
        if round_no == 0 else [{"path": "calc.py", "old": f"ROUND = {round_no - 1}", "new": f"ROUND = {round_no}"}]})


def _recorded(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_review_loop_ends_after_max_rounds_across_a_restart(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text(CALC)
    builder = spawn("builder", "--answers", "plan", replies=[builder_answer(i) for i in range(FOREVER)])
    insist = json.dumps({"status": "changes_requested", "summary": "still not exported",
                         "findings": [{"path": "calc.py", "line": 1, "comment": "export subtract in __all__"}]})
    recording = tmp_path / "reviewer-requests.jsonl"
    reviewer = spawn("reviewer", "--record", str(recording), replies=[insist] * FOREVER)
    assert events(builder.run(make_command("implement")), "builder.completed")
    rounds, last = 0, []
    while rounds < FOREVER:
        last = reviewer.run(make_command("review"))
        rounds += 1
        if events(last, "error"):
            break
        assert events(last, "review.completed")[-1]["status"] == "changes_requested"
        if rounds == 2:  # lorch restarts an agent that died: the count lives on disk
            assert reviewer.close() == 0
            reviewer = spawn("reviewer", replies=[insist] * FOREVER)
        assert events(builder.run(make_command("implement_changes")), "builder.completed")
    assert rounds == 4  # --max-review-rounds default
    err = events(last, "error")[-1]["payload"]
    assert err["code"] == "review_loop_limit" and err["rounds"] == 4 and err["max_rounds"] == 4
    assert "calc.py:1 export subtract in __all__" in err["message"]
    assert not events(last, "review.completed")  # the error is the end; then exit 3 fails lorch's run at once
    assert reviewer.proc.wait(10) == 3
    # From its second round on, the reviewer saw its previous review and what changed since.
    second = _recorded(recording)[1]["request"]["messages"][-1]["content"]
    assert "## Your previous review of this task" in second and "export subtract in __all__" in second
    assert "calc.py: +1 −1 lines" in second and "+ROUND = 1" in second
    assert "round 2 of at most 4" in second


def test_spec_loop_ends_after_max_spec_rounds(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text(CALC)
    (workspace / "SPEC.md").write_text("# Spec\n\n## Behaviour\nadd and subtract\n\n## Status\nadd only\n")
    builder = spawn("builder", "--answers", "plan", replies=[builder_answer(i) for i in range(FOREVER)])
    insist = json.dumps({"status": "changes_requested", "summary": "subtract is missing",
                         "required_changes": ["implement subtract(a, b)"]})
    spec = spawn("spec_maintainer", "--max-spec-rounds", "2", replies=[insist] * FOREVER)
    assert events(builder.run(make_command("implement")), "builder.completed")
    rounds, last = 0, []
    while rounds < FOREVER:
        last = spec.run(make_command("update_spec"))
        rounds += 1
        if events(last, "error"):
            break
        assert events(last, "spec.changes_requested")
        assert events(builder.run(make_command("implement_changes")), "builder.completed")
    assert rounds == 2
    err = events(last, "error")[-1]["payload"]
    assert err["code"] == "spec_loop_limit" and "implement subtract(a, b)" in err["message"]
    assert spec.proc.wait(10) == 3


def test_an_approval_in_the_last_round_ends_the_loop_normally(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text(CALC)
    insist = json.dumps({"status": "changes_requested", "summary": "no",
                         "findings": [{"path": "calc.py", "comment": "export subtract"}]})
    approve = json.dumps({"status": "approved", "summary": "yes", "findings": []})
    reviewer = spawn("reviewer", "--max-review-rounds", "2", replies=[insist, approve])
    assert events(reviewer.run(make_command("review")), "review.completed")[-1]["status"] == "changes_requested"
    (workspace / "calc.py").write_text(CALC + "\n\ndef subtract(a, b):\n    return a - b\n")
    done = events(reviewer.run(make_command("review")), "review.completed")[-1]
    assert done["status"] == "approved" and done["payload"]["round"] == 2
    assert reviewer.proc.poll() is None


def test_changes_requested_of_the_specs_own_sections_end_in_the_edits_it_may_make(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B under real lorch: told Behaviour may not be edited, it asked the builder
    # for "status", "changelog", ... in every round until the loop bound ended the run.
    (workspace / "SPEC.md").write_text("# Spec\n\n## Behaviour\nadd\n\n## Status\nnot started\n\n## Changelog\n- 0.1\n")
    forbidden = json.dumps({"status": "updated", "summary": "stats done", "section_edits": [
        {"section": "Behaviour", "content": "add, now done"}, {"section": "Status", "content": "add is done."}]})
    own = json.dumps({"status": "changes_requested", "summary": "Behaviour section is not allowed for editing",
                      "section_edits": [], "required_changes": ["status", "changelog", "completion", "open_questions"]})
    spec = spawn("spec_maintainer", replies=[forbidden, own, own])
    out = spec.run(make_command("update_spec"))
    done = events(out, "spec.updated")[-1]["payload"]
    assert done["edited_sections"] == ["Status"]
    text = (workspace / "SPEC.md").read_text()
    assert "## Status\n\nadd is done.\n" in text and "## Behaviour\nadd\n" in text
    assert [m["message"] for m in out if m.get("kind") == "log" and m["message"].startswith("spec:")] == [
        "spec: falling back on the earlier answer with edits it may make",
        "spec: edits still not allowed after the repairs were dropped"]


def test_changes_requested_of_the_specs_own_sections_alone_need_no_builder(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text("# Spec\n\n## Behaviour\nadd\n\n## Status\nnot started\n")
    own = json.dumps({"status": "changes_requested", "summary": "s", "required_changes": ["Status", "open_questions"]})
    spec = spawn("spec_maintainer", replies=[own, own])
    out = spec.run(make_command("update_spec"))
    assert events(out, "spec.no_changes_needed") and not events(out, "spec.changes_requested")


def test_changes_requested_of_bare_file_names_need_no_builder(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B under real lorch: required_changes ["fizzbuzz.py"] for code that passed the
    # check, in all four rounds, until the spec loop's bound failed the run
    (workspace / "SPEC.md").write_text("# Spec\n\n## Behaviour\nfizzbuzz\n\n## Status\nnot started\n")
    (workspace / "fizzbuzz.py").write_text("def fizzbuzz(n):\n    return []\n")
    bare = json.dumps({"status": "changes_requested", "summary": "Changelog updated", "required_changes": ["fizzbuzz.py"]})
    rec = tmp_path / "rec.jsonl"
    out = spawn("spec_maintainer", "--record", str(rec), replies=[bare, bare, bare]).run(make_command("update_spec"))
    assert events(out, "spec.no_changes_needed") and not events(out, "spec.changes_requested")
    repair = json.loads(rec.read_text().splitlines()[1])["request"]["messages"][-1]["content"]
    assert "required_changes name only spec sections or files, or say nothing the code must change (fizzbuzz.py)" \
        in repair
    real = json.dumps({"status": "changes_requested", "summary": "s", "required_changes": ["fizzbuzz.py must return FizzBuzz for 15"]})
    out = spawn("spec_maintainer", replies=[real]).run(make_command("update_spec", task_id="T-0002"))
    assert events(out, "spec.changes_requested")


def test_changes_requested_without_saying_which_takes_the_summary(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B under real lorch: the same answer without required_changes twice failed the run
    (workspace / "SPEC.md").write_text("# Spec\n\n## Behaviour\nadd\n\n## Status\nnot started\n")
    vague = json.dumps({"status": "changes_requested", "summary": "fizzbuzz(15) must return FizzBuzz"})
    out = spawn("spec_maintainer", replies=[vague]).run(make_command("update_spec"))
    done = events(out, "spec.changes_requested")[-1]["payload"]
    assert done["required_changes"] == ["fizzbuzz(15) must return FizzBuzz"]


def test_changes_requested_that_only_report_the_maintainers_own_edits_need_no_builder(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B under real lorch, fix-temperature: ["Inputs and Changelog updated"] for right
    # code, twice, each round an implement_changes and a review more
    (workspace / "SPEC.md").write_text("# Spec\n\n## Behaviour\nconvert\n\n## Changelog\n- 0.1\n")
    own = json.dumps({"status": "changes_requested", "summary": "Inputs and Changelog updated",
                      "required_changes": ["Inputs and Changelog updated"],
                      "section_edits": [{"section": "Inputs", "content": "x"},
                                        {"section": "Changelog", "content": "- 0.1\n- 0.2: fixed"}]})
    out = spawn("spec_maintainer", replies=[own, own, own]).run(make_command("update_spec"))
    assert events(out, "spec.updated") and not events(out, "spec.changes_requested")
    assert "- 0.2: fixed" in (workspace / "SPEC.md").read_text()
    notes = json.loads((workspace / "spec_notes" / "T-0001.json").read_text())
    assert notes["status"] == "updated" and notes["required_changes"] == []


def test_changes_requested_that_say_the_task_is_done_need_no_builder(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B under real lorch, fix-palindrome: right code, three spec rounds of this
    (workspace / "SPEC.md").write_text("# Spec\n\n## Behaviour\npalindromes\n\n## Status\nnot started\n")
    done = json.dumps({"status": "changes_requested", "summary": "Review approved, task meets goal",
                       "required_changes": ["Review approved, task meets goal"]})
    out = spawn("spec_maintainer", replies=[done, done, done]).run(make_command("update_spec"))
    assert events(out, "spec.no_changes_needed") and not events(out, "spec.changes_requested")
    real = json.dumps({"status": "changes_requested", "summary": "s", "required_changes": ["the task must handle ''"]})
    out = spawn("spec_maintainer", replies=[real]).run(make_command("update_spec", task_id="T-0002"))
    assert events(out, "spec.changes_requested")


def test_a_vague_change_request_while_the_goals_examples_hold_needs_no_builder(spawn, workspace: Path,
                                                                               tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B held to the plan grammar (run gram2, fix-temperature): "fix temperature.py to
    # match the expected output." for a right fix, four rounds, until the spec loop's bound failed the run
    (workspace / "SPEC.md").write_text("# Spec\n\n## Behaviour\nf_to_c\n\n## Status\nbug\n")
    (workspace / "temp.py").write_text("def f_to_c(f):\n    return (f - 32) * 5 / 9\n")
    goal = {"goal": "Fix f_to_c in temp.py: f_to_c(212) must return 100.0 and f_to_c(32) must return 0.0."}
    vague = json.dumps({"status": "changes_requested", "summary": "s",
                        "required_changes": ["fix temp.py to match the expected output."]})
    rec = tmp_path / "rec.jsonl"
    out = spawn("spec_maintainer", "--record", str(rec), "--test-command", "true",
                replies=[vague, vague, vague]).run(make_command("update_spec", inputs=goal))
    assert events(out, "spec.no_changes_needed") and not events(out, "spec.changes_requested")
    # the 0.5B (run gram8): ["findings"], "the goal's examples do not hold", while they all held
    word = json.dumps({"status": "changes_requested", "summary": "the goal's examples do not hold",
                       "required_changes": ["findings"]})
    out2 = spawn("spec_maintainer", "--test-command", "true", replies=[word, word, word]).run(
        make_command("update_spec", task_id="T-0003", inputs=goal))
    assert events(out2, "spec.no_changes_needed") and not events(out2, "spec.changes_requested")
    sent = [json.loads(x)["request"]["messages"][-1]["content"] for x in rec.read_text().splitlines()]
    assert "## The goal's own examples, run on the code now by the agent\n- f_to_c(212): holds" in sent[0]
    assert "the agent ran the goal's own examples on the code and each holds (f_to_c(212); f_to_c(32))" in sent[1]
    # while an example fails, the same words are a request for the builder
    (workspace / "temp.py").write_text("def f_to_c(f):\n    return f - 32 * 5 / 9\n")
    out = spawn("spec_maintainer", "--test-command", "true", replies=[vague]).run(
        make_command("update_spec", task_id="T-0002", inputs=goal))
    assert events(out, "spec.changes_requested")
