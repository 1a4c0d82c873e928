"""End-to-end: what the builder sees, and replies checked for meaning and repaired precisely.

Requests are read back from `--record` (the scripted model's exchanges), so the assertions are on
the prompts the agent really sent.
"""

from __future__ import annotations

import json
from pathlib import Path

from support import events, fenced, make_command

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
    fix = fenced(("stack.py", STACK.replace("return 5\n", "return 55\n")), words="op5 returns 55")
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--record", str(rec), replies=[fix])
    done = events(agent.run(make_command("implement_changes", inputs={"goal": "make op5 right"})),
                  "builder.completed")[-1]
    assert done["payload"]["files"] == ["stack.py"] and done["status"] == "success"
    assert (workspace / "stack.py").read_text() == STACK.replace("return 5\n", "return 55\n").rstrip("\n") + "\n"
    [messages] = _requests(rec)
    user = messages[-1]["content"]
    assert "op5 returns 55." in user                               # the spec from specs/
    assert "### stack.py\n```\nclass Stack:" in user and "def op5(self):" in user  # the file under review, whole
    assert "op5 must return 55" in user                            # the finding to address
    assert "def test_op0():" in user                               # a small project file that fits
    listing = user.split("## Other files of the project (not shown)\n", 1)[1]
    assert listing.split("\n## ")[0].split("\n\n")[0].splitlines() == ["data/big.csv"]  # quoted is not listed again
    for hidden in ("lorch.json", "lorch-console.log", "events/", "state/", "transcripts/", "reviews/"):
        assert hidden not in listing
    assert "LORCH noise" not in user


def test_a_test_file_emptied_is_refused_and_the_file_survives(spawn, workspace: Path,
                                                               tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    stub = fenced(("stack.py", "class Stack:\n    def op5(self):\n        return 55\n"), ("tests/test_stack.py", "\n"))
    agent = spawn("builder", replies=[stub])
    done = events(agent.run(make_command("implement", inputs={"goal": "op5 returns 55"})), "builder.completed")[-1]
    text = (workspace / "stack.py").read_text()
    assert text.count("def op") == 6 and "return 55" in text  # the class with one method was merged into stack.py
    assert (workspace / "tests" / "test_stack.py").read_text() == TEST
    assert done["payload"]["files"] == ["stack.py"]


def test_a_whole_file_answer_holding_one_method_is_merged_into_its_class(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    # Qwen2.5-Coder-0.5B under real lorch: "the whole file" was the one method it changed
    part = fenced(("stack.py", "def op5(self):\n    return 55\n"), words="op5 returns 55")
    out = spawn("builder", replies=[part]).run(make_command("implement", inputs={"goal": "op5 in stack.py returns 55"}))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["files"] == ["stack.py"]
    assert (workspace / "stack.py").read_text() == STACK.replace("return 5\n", "return 55\n")
    assert [a["path"] for a in _audit(workspace) if a.get("name") == "merge_partial_file"] == ["stack.py"]


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


def test_an_approval_citing_a_file_that_does_not_exist_is_sent_back_for_a_repair(
        spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    stray = json.dumps({"status": "approved", "summary": "fine", "findings": [{"path": "nowhere.py", "comment": "x"}]})
    clean = json.dumps({"status": "approved", "summary": "fine", "findings": []})
    rec = tmp_path / "rec.jsonl"
    agent = spawn("reviewer", "--record", str(rec), replies=[stray, clean])
    done = events(agent.run(make_command("review")), "review.completed")[-1]
    assert done["status"] == "approved" and done["payload"]["findings"] == []
    requests = _requests(rec)
    assert len(requests) == 2 and "'nowhere.py', which is not a file of the project" in requests[1][-1]["content"]


def test_implement_changes_without_an_applicable_answer_keeps_passing_code_and_says_so(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    import sys

    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (workspace / "test_calc.py").write_text("import calc\n\n\ndef test_add():\n    assert calc.add(2, 2) == 4\n")
    # the 0.5B's reviewer restated the goal as a finding; the builder's replies then held no file
    nowhere = "The code already returns the sum as the goal says."
    test_cmd = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    out = spawn("builder", "--builder-rounds", "2", "--test-command", test_cmd, replies=[nowhere] * 2).run(
        make_command("implement_changes", inputs={"goal": "add adds"}))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["files"] == []
    assert done["payload"]["tests"]["status"] == "pass"
    assert done["payload"]["no_changes_reason"].startswith("no applicable change for the review's findings")
    assert done["payload"]["answer_via"] == "none"
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    # ... but code whose tests fail is no code to keep: the failure stands
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    out = spawn("builder", "--builder-rounds", "2", "--test-command", test_cmd, replies=[nowhere] * 2).run(
        make_command("implement_changes", inputs={"goal": "add adds"}, task_id="T-0002"))
    assert not events(out, "builder.completed") or events(out, "builder.completed")[-1]["status"] != "success"
    assert any(m.get("event") == "error" or m.get("status") == "failed" for m in out if m.get("kind") == "event")


def test_failing_tests_go_back_to_the_builder_with_their_output(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import sys

    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (workspace / "test_calc.py").write_text("import calc\n\n\ndef test_add():\n    assert calc.add(2, 2) == 4\n")
    wrong = fenced(("calc.py", "def add(a, b):\n    return a * b + 1\n"), words="try")
    right = fenced(("calc.py", "def add(a, b):\n    return a + b\n"), words="add adds")
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--record", str(rec), "--test-command", f"{sys.executable} -m pytest -q -p no:cacheprovider",
                  replies=[wrong, right])
    done = events(agent.run(make_command("implement", inputs={"goal": "fix add in calc.py"})), "builder.completed")[-1]
    assert done["payload"]["tests"]["status"] == "pass" and done["payload"]["rounds"] == 2
    assert done["payload"]["summary"] == "add adds" and (workspace / "calc.py").read_text().endswith("a + b\n")
    repair = "\n".join(m["content"] for m in _requests(rec)[1])
    assert "## The tests failed after your last change" in repair and "assert 5 == 4" in repair
    assert "return a * b + 1" in repair  # the file as it is now


def test_one_builder_round_asks_once(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    wrong = fenced(("calc.py", "def add(a, b):\n    return a * b\n"), words="try")
    agent = spawn("builder", "--test-command", "false", "--builder-rounds", "1", replies=[wrong, wrong])
    done = events(agent.run(make_command("implement", inputs={"goal": "fix add in calc.py"})), "builder.completed")[-1]
    assert done["payload"]["tests"]["status"] == "fail" and done["payload"]["rounds"] == 1
    assert done["payload"]["usage"]["calls"] == 1


def test_a_fix_that_leaves_the_code_doing_the_same_is_sent_back(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B under real lorch: the buggy function quoted back unchanged, minus its docstring
    src = 'def f_to_c(f):\n    """Convert."""\n    return f - 32 * 5 / 9\n'
    (workspace / "temp.py").write_text(src)
    same = fenced(("temp.py", "def f_to_c(f):\n    return f - 32 * 5 / 9\n"), words="fixed")
    fix = fenced(("temp.py", "def f_to_c(f):\n    return (f - 32) * 5 / 9\n"), words="fixed")
    rec = tmp_path / "rec.jsonl"
    goal = {"goal": "Fix f_to_c in temp.py: f_to_c(212) must return 100.0"}
    done = events(spawn("builder", "--record", str(rec), replies=[same, fix]).run(make_command("implement", inputs=goal)),
                  "builder.completed")[-1]
    assert done["status"] == "success" and "(f - 32) * 5 / 9" in (workspace / "temp.py").read_text()
    assert [e["outcome"] for e in done["payload"]["round_log"]] == ["unusable", "written"]
    repair = _requests(rec)[1][-1]["content"]
    assert "it leaves the code doing exactly what it did, so the task is not done" in repair
    assert "The task names this code, as it is now:\ntemp.py\n```\ndef f_to_c(f):" in repair
    assert "return f - 32 * 5 / 9\n```\nWork out step by step what it returns" in repair
    (workspace / "temp.py").write_text(src)  # a goal about docstrings may change nothing else
    agent = spawn("builder", replies=[same])
    done = events(agent.run(make_command("implement", inputs={"goal": "Drop the docstring of f_to_c"})),
                  "builder.completed")[-1]
    assert done["status"] == "success" and '"""' not in (workspace / "temp.py").read_text()
    (workspace / "temp.py").write_text(src)  # but not when the goal's own example fails on the code today
    goal = {"goal": "Fix f_to_c in temp.py: as its docstring says, f_to_c(212) must return 100.0"}
    agent = spawn("builder", "--test-command", "true", "--disable-repair", "write_goal_tests", replies=[same, fix])
    done = events(agent.run(make_command("implement", inputs=goal)), "builder.completed")[-1]
    assert [e["outcome"] for e in done["payload"]["round_log"]] == ["unusable", "kept"]
    assert "(f - 32) * 5 / 9" in (workspace / "temp.py").read_text()


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
