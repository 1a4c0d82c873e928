"""End-to-end: what the builder sees, and answers checked for meaning and repaired precisely.

Requests are read back from `--record` (the scripted model's exchanges), so the assertions are on
the prompts the agent really sent.
"""

from __future__ import annotations

import json
from pathlib import Path

from support import events, make_command

STACK = "class Stack:\n" + "".join(f"    def op{i}(self):\n        return {i}\n\n" for i in range(6))
TEST = "from stack import Stack\n\n\ndef test_op0():\n    assert Stack().op0() == 0\n"
SPEC = "# Stack spec\n\n## Behaviour\nop5 returns 55.\n\n## Status\nop0-op5 exist.\n"


def _requests(path: Path) -> list[list[dict[str, str]]]:
    return [json.loads(line)["request"]["messages"] for line in path.read_text().splitlines() if line.strip()]


def _audit(ws: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (ws / "logs/luallm-agent/audit.jsonl").read_text().splitlines()]


def _project(ws: Path) -> None:
    (ws / "stack.py").write_text(STACK)
    (ws / "tests").mkdir()
    (ws / "tests" / "test_stack.py").write_text(TEST)
    (ws / "specs").mkdir()
    (ws / "specs" / "stack.md").write_text(SPEC)
    for rel, text in (("lorch.json", '{"version": "1.0"}'), ("lorch-console.log", "LORCH noise"),
                      ("events/run-1.ndjson", "{}"), ("state/run.json", "{}"), ("transcripts/t.txt", "x")):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)


def test_builder_sees_the_spec_the_files_under_review_and_never_the_bookkeeping(spawn, workspace: Path,
                                                                                 tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    (workspace / "data").mkdir()
    (workspace / "data" / "big.csv").write_text("n,square\n" + "".join(f"{i},{i * i}\n" for i in range(2000)))
    (workspace / "reviews").mkdir()
    (workspace / "reviews" / "T-0001.json").write_text(json.dumps({"task_id": "T-0001", "status": "changes_requested",
                                                                    "findings": [{"path": "stack.py", "line": 17,
                                                                                  "comment": "op5 must return 55"}]}))
    fix = json.dumps({"summary": "op5 returns 55",
                      "edits": [{"path": "stack.py", "old": "        return 5\n", "new": "        return 55\n"}]})
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--record", str(rec), replies=[fix])
    done = events(agent.run(make_command("implement_changes", inputs={"goal": "make op5 right"})),
                  "builder.completed")[-1]
    assert done["payload"]["files"] == ["stack.py"] and done["status"] == "success"
    assert (workspace / "stack.py").read_text() == STACK.replace("return 5\n", "return 55\n")
    [messages] = _requests(rec)
    user = messages[-1]["content"]
    assert "op5 returns 55." in user                               # the spec from specs/
    assert "### stack.py\n```\nclass Stack:" in user and "def op5(self):" in user  # the file under review, whole
    assert "op5 must return 55" in user                            # the finding to address
    assert "def test_op0():" in user                               # a small project file that fits
    listing = user.split("## Other files of the project (not shown)\n", 1)[1]
    assert listing.split("\n\n")[0].splitlines() == ["data/big.csv"]  # what is quoted is not listed again
    for hidden in ("lorch.json", "lorch-console.log", "events/", "state/", "transcripts/", "reviews/"):
        assert hidden not in listing
    assert "LORCH noise" not in user


def test_files_as_plain_strings_get_the_expected_shape_then_edits_fix_it(spawn, workspace: Path,
                                                                          tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    listing_echo = json.dumps({"files": ["lorch-console.log", "lorch.json"], "summary": "make op5 return 55"})
    fix = json.dumps({"summary": "op5 returns 55",
                      "edits": [{"path": "stack.py", "old": "        return 5\n", "new": "        return 55\n"}]})
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--record", str(rec), replies=[listing_echo, fix])
    done = events(agent.run(make_command("implement", inputs={"goal": "make op5 in stack.py return 55"})),
                  "builder.completed")[-1]
    assert done["payload"]["files"] == ["stack.py"]
    repair = _requests(rec)[1][-1]["content"]
    assert "`files` must be a list of objects like {\"path\": \"src/app.py\", \"content\":" in repair
    assert "you gave plain strings ('lorch-console.log', 'lorch.json')" in repair and "edits" in repair
    assert not (workspace / "lorch.json").read_text().startswith("lorch")  # untouched


def test_a_test_file_emptied_is_sent_back_and_the_file_survives(spawn, workspace: Path,
                                                                       tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    stub = json.dumps({"summary": "op5", "files": [{"path": "stack.py", "content": "class Stack:\n    def op5(self):\n"
                                                                                    "        return 55\n"},
                                                   {"path": "tests/test_stack.py", "content": "\n"}]})
    fix = json.dumps({"summary": "op5 returns 55",
                      "edits": [{"path": "stack.py", "old": "        return 5\n", "new": "        return 55\n"}]})
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--record", str(rec), replies=[stub, fix])
    agent.run(make_command("implement", inputs={"goal": "op5 returns 55"}))
    text = (workspace / "stack.py").read_text()
    assert text.count("def op") == 6 and "return 55" in text
    assert (workspace / "tests" / "test_stack.py").read_text() == TEST
    repair = _requests(rec)[1][-1]["content"]
    assert "files[1] would remove every test from tests/test_stack.py" in repair
    assert "files[0]" not in repair  # the class with one method was merged into stack.py


def test_implement_without_any_change_must_say_why(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    nothing = json.dumps({"summary": "done"})
    why = json.dumps({"summary": "done", "no_changes_reason": "op5 already returns what the spec asks"})
    rec = tmp_path / "rec.jsonl"
    done = events(spawn("builder", "--answers", "json", "--record", str(rec), replies=[nothing, why]).run(make_command("implement")),
                  "builder.completed")[-1]
    assert done["payload"]["no_changes_reason"].startswith("op5 already") and done["payload"]["files"] == []
    assert "implement needs at least one change" in _requests(rec)[1][-1]["content"]


def test_an_edit_that_does_not_match_gets_the_exact_reason(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    wrong = json.dumps({"summary": "x", "edits": [{"path": "stack.py", "old": "    def op5(self):\n        value = "
                                                   "self.compute_the_fifth_operation()\n        return value\n",
                                                   "new": "x"}]})
    fix = json.dumps({"summary": "op5 returns 55",
                      "edits": [{"path": "stack.py", "old": "        return 5\n", "new": "        return 55\n"}]})
    rec = tmp_path / "rec.jsonl"
    spawn("builder", "--answers", "json", "--record", str(rec), replies=[wrong, fix]).run(make_command("implement"))
    repair = _requests(rec)[1][-1]["content"]
    assert "edits[0]: the old text is not in stack.py; its first line ('def op5(self):') is at line 17" in repair


def test_an_edit_copied_loosely_lands_on_its_block_and_says_so(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    loose = json.dumps({"summary": "op5 returns 55",  # wrong indentation and spacing: the same lines otherwise
                        "edits": [{"path": "stack.py", "old": "  def op5(self):\n    return 5", "new":
                                   "  def op5(self):\n    return 55"}]})
    agent = spawn("builder", "--answers", "json", replies=[loose])
    out = agent.run(make_command("implement", inputs={"goal": "op5 in stack.py returns 55"}))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["files"] == ["stack.py"]
    assert (workspace / "stack.py").read_text() == STACK.replace("return 5\n", "return 55\n")
    [log] = [m for m in out if m.get("kind") == "log" and m.get("message") == "changes placed by the agent"]
    assert log["fields"]["notes"] == ["edits[0]: old was not exact; replaced lines 17-18 of stack.py "
                                      "(ignoring whitespace)"]


def test_a_whole_file_answer_holding_one_method_is_merged_into_its_class(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    # Qwen2.5-Coder-0.5B under real lorch: "the whole file" was the one method it changed
    part = json.dumps({"summary": "op5 returns 55", "files": [{"path": "stack.py",
                                                               "content": "def op5(self):\n    return 55\n"}]})
    out = spawn("builder", "--answers", "json", replies=[part]).run(make_command("implement", inputs={"goal": "op5 in stack.py returns 55"}))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["files"] == ["stack.py"]
    assert (workspace / "stack.py").read_text() == STACK.replace("return 5\n", "return 55\n")
    [log] = [m for m in out if m.get("kind") == "log" and m.get("message") == "changes placed by the agent"]
    assert log["fields"]["notes"] == ["files[0] held only part of stack.py: replaced Stack.op5"]


def _copied_example(spawn, workspace: Path, tmp_path: Path, *flags: str):  # type: ignore[no-untyped-def]
    """A builder whose first JSON answer edits the worked example's old text, then a right whole file."""
    _project(workspace)
    # Qwen2.5-Coder-0.5B under real lorch: the worked example's old text, in every first answer
    copied = json.dumps({"summary": "x", "edits": [{"path": "stack.py", "old": "    return \"1.0\"\n", "new": "y"}]})
    whole = json.dumps({"summary": "op5 returns 55", "files": [{"path": "stack.py",
                                                                "content": STACK.replace("return 5\n", "return 55\n")}]})
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--record", str(rec), *flags, replies=[copied, whole],
                  json_schema=False)
    out = agent.run(make_command("implement", inputs={"goal": "op5 in stack.py returns 55"}))
    return events(out, "builder.completed")[-1], _requests(rec)


def test_an_answer_copying_the_worked_example_starts_over_at_once_in_whole_files(spawn, workspace: Path,
                                                                                 tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    done, sent = _copied_example(spawn, workspace, tmp_path)
    assert done["status"] == "success" and (workspace / "stack.py").read_text().count("return 55\n") == 1
    assert len(sent) == 2  # no second question about the example
    assert any("(A worked example" in m["content"] for m in sent[0])
    # ... from the task alone: without the worked example and the rejected answer
    assert [m["role"] for m in sent[1]] == ["system", "user"]
    note = sent[1][1]["content"]
    assert note.startswith("# Task T-") and note.count('return \\"1.0\\"') == 0
    assert "Your answer was rejected (invalid_model_response): edits[0]: the old text is not in stack.py" in note
    assert "Your answer copied the worked example ('return \"1.0\"')" in note
    assert 'now give no edits: give each file you change whole in `files`: [{"path": "stack.py", "content": ' \
           '<all of stack.py, with your change>}]' in note
    audit = _audit(workspace)
    assert [a["line"] for a in audit if a.get("event") == "answer_copied_example"] == ['return "1.0"']
    assert [a["attempt"] for a in audit if a.get("name") == "refuse_copied_example"] == [1]


def test_with_refuse_copied_example_off_the_copy_is_repaired_like_any_error(spawn, workspace: Path,
                                                                            tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    done, sent = _copied_example(spawn, workspace, tmp_path, "--disable-repair", "refuse_copied_example")
    assert done["status"] == "success"
    assert any("(A worked example" in m["content"] for m in sent[1])  # an ordinary repair: the example stays
    assert not any("copied the worked example" in m["content"] for m in sent[1])
    assert not [a for a in _audit(workspace) if a.get("event") == "answer_copied_example"]


def test_the_same_failing_prose_edit_twice_is_dropped_and_the_code_kept(spawn, workspace: Path,
                                                                        tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    (workspace / "PLAN.md").write_text("# Plan\n- op5 returns 55\n")
    # the 1.5B under real lorch: the right code change beside an edit of PLAN.md with a made-up old
    both = json.dumps({"summary": "op5 returns 55", "edits": [
        {"path": "stack.py", "old": "        return 5\n", "new": "        return 55\n"},
        {"path": "PLAN.md", "old": "n/a", "new": "- [x] op5 returns 55\n"}]})
    rec = tmp_path / "rec.jsonl"
    out = spawn("builder", "--answers", "json", "--record", str(rec), replies=[both, both]).run(
        make_command("implement", inputs={"goal": "op5 in stack.py returns 55"}))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["files"] == ["stack.py"]
    assert (workspace / "stack.py").read_text() == STACK.replace("return 5\n", "return 55\n")
    assert (workspace / "PLAN.md").read_text() == "# Plan\n- op5 returns 55\n"
    assert len(_requests(rec)) == 2  # no third, narrowed question
    [warn] = [m for m in out if m.get("kind") == "log" and m.get("message", "").startswith("builder answer: dropped")]
    assert warn["fields"]["dropped"] == ["edits[1]"]


def test_the_same_failing_edit_twice_asks_for_whole_files(spawn, workspace: Path,
                                                          tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    wrong = json.dumps({"summary": "x", "edits": [{"path": "stack.py", "old": "    return 777\n", "new": "y"}]})
    whole = json.dumps({"summary": "op5 returns 55", "files": [{"path": "stack.py",
                                                                "content": STACK.replace("return 5\n", "return 55\n")}]})
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--record", str(rec), replies=[wrong, wrong, whole], json_schema=False)
    done = events(agent.run(make_command("implement", inputs={"goal": "op5 in stack.py returns 55"})),
                  "builder.completed")[-1]
    assert done["status"] == "success" and (workspace / "stack.py").read_text().count("return 55\n") == 1
    sent = _requests(rec)
    assert any("(A worked example" in m["content"] for m in sent[1])  # one ordinary repair first
    assert [m["role"] for m in sent[2]] == ["system", "user"]
    assert "whole in `files`" in sent[2][1]["content"] and "copied the worked example" not in sent[2][1]["content"]
    audit = _audit(workspace)
    # ... and sampled more widely: at 0.2 the 0.5B gave the identical broken answer on every repair
    assert [(a["attempt"], a["temperature"]) for a in audit if a.get("event") == "answer_temperature"] == [(2, 0.8)]


def test_reviewer_finding_beyond_the_end_of_a_file_is_repaired_then_its_line_dropped(spawn, workspace: Path,
                                                                                     tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    line10 = json.dumps({"status": "changes_requested", "summary": "fix it",
                         "findings": [{"path": "calc.py", "line": 10, "comment": "handle floats"},
                                      {"path": "nowhere.py", "comment": "missing"}]})
    rec = tmp_path / "rec.jsonl"
    agent = spawn("reviewer", "--record", str(rec), replies=[line10, line10, line10])
    done = events(agent.run(make_command("review")), "review.completed")[-1]
    assert done["status"] == "changes_requested"
    assert done["payload"]["findings"] == [{"path": "calc.py", "comment": "handle floats"}]
    requests = _requests(rec)
    assert len(requests) == 2  # the same answer twice: no third question, the salvage decides
    repair = requests[1][-1]["content"]
    assert "findings[0] cites calc.py line 10, but calc.py has 2 lines" in repair
    assert "findings[1] cites 'nowhere.py', which is not a file of the project" in repair
    assert "  1| def add(a, b):" in requests[0][-1]["content"]  # numbered, so lines can be cited


def test_an_approval_citing_a_file_that_does_not_exist_is_taken_without_that_note_unless_switched_off(
        spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    stray = json.dumps({"status": "approved", "summary": "fine", "findings": [{"path": "nowhere.py", "comment": "x"}]})
    clean = json.dumps({"status": "approved", "summary": "fine", "findings": []})
    # (the second run reviews the same code: its last approval would stand without a question)
    for on in (True, False):
        rec = tmp_path / f"rec-{on}.jsonl"
        off = ["--disable-repair", "approval_stands_on_same_code"] + \
            ([] if on else ["--disable-repair", "approval_keeps_grounded_notes"])
        agent = spawn("reviewer", "--record", str(rec), *off, replies=[stray, clean])
        done = events(agent.run(make_command("review", key=f"ik:{'ab' * 16}{on}")), "review.completed")[-1]
        assert done["status"] == "approved" and done["payload"]["findings"] == []
        assert len(_requests(rec)) == (1 if on else 2)  # off: sent back for a repair


def test_implement_changes_without_an_applicable_answer_keeps_passing_code_and_says_so(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    import sys

    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (workspace / "test_calc.py").write_text("import calc\n\n\ndef test_add():\n    assert calc.add(2, 2) == 4\n")
    # the 0.5B's reviewer restated the goal as a finding; the builder's edits then named text that is nowhere
    nowhere = json.dumps({"summary": "x", "edits": [{"path": "calc.py", "old": "return the sum as the goal says",
                                                      "new": "return a + b"}]})
    test_cmd = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    out = spawn("builder", "--answers", "json", "--test-command", test_cmd, replies=[nowhere] * 3).run(
        make_command("implement_changes", inputs={"goal": "add adds"}))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["files"] == []
    assert done["payload"]["tests"]["status"] == "pass"
    assert done["payload"]["no_changes_reason"].startswith("no applicable change for the review's findings")
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    # ... but code whose tests fail is no code to keep: the failure stands
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    out = spawn("builder", "--answers", "json", "--test-command", test_cmd, replies=[nowhere] * 3).run(
        make_command("implement_changes", inputs={"goal": "add adds"}, task_id="T-0002"))
    assert not events(out, "builder.completed") or events(out, "builder.completed")[-1]["status"] != "success"
    assert any(m.get("event") == "error" or m.get("status") == "failed" for m in out if m.get("kind") == "event")


def test_failing_tests_go_back_to_the_builder_with_their_output(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import sys

    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (workspace / "test_calc.py").write_text("import calc\n\n\ndef test_add():\n    assert calc.add(2, 2) == 4\n")
    wrong = json.dumps({"summary": "try", "edits": [{"path": "calc.py", "old": "a - b", "new": "a * b + 1"}]})
    right = json.dumps({"summary": "add adds", "edits": [{"path": "calc.py", "old": "a * b + 1", "new": "a + b"}]})
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--record", str(rec), "--test-command", f"{sys.executable} -m pytest -q -p no:cacheprovider",
                  replies=[wrong, right])
    done = events(agent.run(make_command("implement", inputs={"goal": "fix add in calc.py"})), "builder.completed")[-1]
    assert done["payload"]["tests"]["status"] == "pass" and done["payload"]["test_repairs"] == 1
    assert done["payload"]["summary"] == "add adds" and (workspace / "calc.py").read_text().endswith("a + b\n")
    repair = _requests(rec)[1][-1]["content"]
    assert "## The tests failed after your change" in repair and "assert 5 == 4" in repair
    assert "return a * b + 1" in repair  # the file as it is now


def test_test_repairs_can_be_turned_off(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    wrong = json.dumps({"summary": "try", "edits": [{"path": "calc.py", "old": "a - b", "new": "a * b"}]})
    agent = spawn("builder", "--answers", "json", "--test-command", "false", "--test-repairs", "0", replies=[wrong])
    done = events(agent.run(make_command("implement")), "builder.completed")[-1]
    assert done["payload"]["tests"]["status"] == "fail" and "test_repairs" not in done["payload"]
    assert done["payload"]["usage"]["calls"] == 1


def test_a_fix_that_leaves_the_code_doing_the_same_is_sent_back(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B under real lorch: the buggy function quoted back unchanged, minus its docstring
    src = 'def f_to_c(f):\n    """Convert."""\n    return f - 32 * 5 / 9\n'
    (workspace / "temp.py").write_text(src)
    same = json.dumps({"summary": "fixed", "edits": [{"path": "temp.py", "old": src,
                                                      "new": "def f_to_c(f):\n    return f - 32 * 5 / 9\n"}]})
    fix = json.dumps({"summary": "fixed", "edits": [{"path": "temp.py", "old": "f - 32 * 5", "new": "(f - 32) * 5"}]})
    rec = tmp_path / "rec.jsonl"
    goal = {"goal": "Fix f_to_c in temp.py: f_to_c(212) must return 100.0"}
    done = events(spawn("builder", "--answers", "json", "--record", str(rec), replies=[same, fix]).run(make_command("implement", inputs=goal)),
                  "builder.completed")[-1]
    assert done["status"] == "success" and "(f - 32) * 5 / 9" in (workspace / "temp.py").read_text()
    repair = _requests(rec)[1][-1]["content"]
    assert "this change leaves what temp.py does exactly as it was" in repair
    # a fresh conversation, not a repair of the answer it kept defending
    assert [m["role"] for m in _requests(rec)[1]] == ["system", "user"] and "# Task T-0001" in repair
    assert any(r["event"] == "answer_start_over" for r in _audit(workspace))
    assert "The goal names this code, as it is now:\ntemp.py\n```\ndef f_to_c(f):" in repair
    assert "return f - 32 * 5 / 9\n```\nWork out step by step what it returns" in repair
    (workspace / "temp.py").write_text(src)  # a goal about docstrings may change nothing else
    agent = spawn("builder", "--answers", "json", replies=[same])
    done = events(agent.run(make_command("implement", inputs={"goal": "Drop the docstring of f_to_c"})),
                  "builder.completed")[-1]
    assert done["status"] == "success" and '"""' not in (workspace / "temp.py").read_text()


def test_a_valid_review_that_repeats_the_worked_example_is_sent_back_even_after_a_start_over(
        spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    # Qwen2.5-Coder-0.5B under real lorch: every round's finding was the example's own comment
    copy = {"status": "changes_requested", "summary": "op5's text does not match the goal",
            "findings": [{"path": "stack.py", "comment": "return f\"Hello, {name}!\" as the goal says"}]}
    own = {"status": "approved", "summary": "op5 returns 5 as the goal says", "findings": []}
    rec = tmp_path / "rec.jsonl"
    agent = spawn("reviewer", "--record", str(rec), replies=[json.dumps(copy), json.dumps(copy), json.dumps(own)], json_schema=False)
    done = events(agent.run(make_command("review", inputs={"goal": "op5 in stack.py returns 5"})), "review.completed")[-1]
    assert done["status"] == "approved"
    sent = _requests(rec)
    assert [m["role"] for m in sent[1]] == ["system", "user"]  # started over without the example ...
    assert "the answer repeats the worked example" in sent[2][-1]["content"]  # ... and still checked against it
    audit = _audit(workspace)
    assert len([a for a in audit if a.get("event") == "answer_copied_example"]) == 2


def test_a_server_holding_the_schema_gets_the_fields_in_brief_and_no_worked_example(
        spawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    own = json.dumps({"status": "approved", "summary": "op5 returns 5", "findings": []})
    sent = {}
    for held in (True, False):
        rec, ws = tmp_path / f"rec-{held}.jsonl", tmp_path / f"ws-{held}"
        ws.mkdir()
        _project(ws)
        agent = spawn("reviewer", "--record", str(rec), workspace=ws, replies=[own], json_schema=held)
        done = events(agent.run(make_command("review", inputs={"goal": "op5 in stack.py returns 5"})),
                      "review.completed")[-1]
        assert done["status"] == "approved"
        [sent[held]] = _requests(rec)
    held_system = sent[True][0]["content"]
    assert '- status: "approved" or "changes_requested"' in held_system
    assert "- findings: list of {path: text, line?: integer, comment: text}" in held_system
    assert "JSON Schema" not in held_system and [m["role"] for m in sent[True]] == ["system", "user"]
    # without response_format the model sees the schema itself and the worked example
    assert "JSON Schema" in sent[False][0]["content"]
    assert sent[False][1]["content"].startswith("(A worked example")
