"""End-to-end: `--add-tests goal`, a test written from the goal before the code, tried beside it.

The real agent runs as a subprocess against a scripted model; the assertions are on its events,
the files on disk and the requests it really sent (read back from `--record`).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from support import events, make_command

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
OLD_TEST = "from cart import Cart\n\n\ndef test_add():\n    c = Cart()\n    c.add('a', 2)\n    assert c.items == {'a': 2}\n"
CART = "class Cart:\n    def __init__(self):\n        self.items = {}\n\n    def add(self, name, n=1):\n" \
       "        self.items[name] = self.items.get(name, 0) + n\n"
GOAL = "Add remove(name, n=1) to Cart in cart.py: it lowers the count and deletes the item at 0."
SLIP = "    def remove(self, name, n=1):\n        self.items[name] -= n\n"
RIGHT = "    def remove(self, name, n=1):\n        self.items[name] -= n\n        if self.items[name] <= 0:\n" \
        "            del self.items[name]\n"
GOAL_TEST = "from cart import Cart\n\n\ndef test_remove_last_deletes():\n    c = Cart()\n    c.add('a', 2)\n" \
            "    c.remove('a', 2)\n    assert 'a' not in c.items\n"


def _project(ws: Path) -> None:
    (ws / "cart.py").write_text(CART)
    (ws / "tests").mkdir()
    (ws / "tests" / "test_cart.py").write_text(OLD_TEST)


def _code(body: str) -> str:
    return json.dumps({"summary": "remove", "files": [{"path": "cart.py", "content": CART + "\n" + body}]})


def _test(path: str, content: str) -> str:
    return json.dumps({"summary": "a test of the goal", "files": [{"path": path, "content": content}]})


def _asks(rec: Path) -> list[str]:
    return [json.loads(line)["request"]["messages"][-1]["content"] for line in rec.read_text().splitlines()]


def test_the_goal_test_is_asked_before_the_code_catches_the_slip_and_is_kept(spawn, workspace: Path,
                                                                             tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--record", str(rec), "--test-command", PYTEST, "--add-tests", "goal",
                  replies=[_test("tests/test_remove.py", GOAL_TEST), _code(SLIP), _code(RIGHT)])
    out = agent.run(make_command("implement", inputs={"goal": GOAL}))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["tests"]["status"] == "pass"
    assert done["payload"]["test_repairs"] == 1
    assert done["payload"]["goal_test"] == {"status": "kept", "files": ["tests/test_remove.py"]}
    assert "tests_taken_out" not in done["payload"]
    assert sorted(done["payload"]["files"]) == ["cart.py", "tests/test_remove.py"]
    assert (workspace / "tests" / "test_remove.py").read_text() == GOAL_TEST
    produced = {e["payload"]["path"]: e["payload"]["sha256"] for e in events(out, "artifact.produced")}
    assert produced["tests/test_remove.py"] == "sha256:" + hashlib.sha256(GOAL_TEST.encode()).hexdigest()
    asks = _asks(rec)
    assert "## Now: a test of the goal, before the code" in asks[0] and "e.g. in tests/test_cart.py" in asks[0]
    assert "def remove" not in asks[0] and "## Now" not in asks[1]  # the code is asked for on its own
    assert "## The tests failed after your change" in asks[2] and "assert 'a' not in" in asks[2]


def test_a_goal_test_that_stays_wrong_is_taken_out_and_the_change_stands(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    wrong = OLD_TEST + "\n\ndef test_remove():\n    c = Cart()\n    c.add('a', 2)\n    c.remove('a', 2)\n" \
                       "    assert c.items == {'a': 0}\n"
    edit = json.dumps({"summary": "t", "edits": [{"path": "tests/test_cart.py", "old": OLD_TEST, "new": wrong}]})
    agent = spawn("builder", "--answers", "json", "--test-command", PYTEST, "--add-tests", "goal",
                  replies=[edit, _code(RIGHT), _code(RIGHT), _code(RIGHT)])
    out = agent.run(make_command("implement", inputs={"goal": GOAL}))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["tests"]["status"] == "pass"
    assert done["payload"]["goal_test"] == {"status": "taken_out", "files": ["tests/test_cart.py"]}
    report = done["payload"]["tests_taken_out"]
    assert report["files"] == ["tests/test_cart.py"] and "{'a': 0}" in report["output_tail"]
    assert (workspace / "tests" / "test_cart.py").read_text() == OLD_TEST  # byte for byte as it was
    assert done["payload"]["files"] == ["cart.py"] and done["payload"]["test_repairs"] >= 1
    assert any(e.get("message", "").startswith("tests this change added still failed") for e in out)


def test_a_new_goal_test_file_that_fails_is_removed(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    wrong = GOAL_TEST.replace("'a' not in c.items", "c.items == {'a': 0}")
    agent = spawn("builder", "--answers", "json", "--test-command", PYTEST, "--add-tests", "goal", "--test-repairs", "0",
                  replies=[_test("tests/test_remove.py", wrong), _code(RIGHT)])
    done = events(agent.run(make_command("implement", inputs={"goal": GOAL})), "builder.completed")[-1]
    assert done["payload"]["tests"]["status"] == "pass" and done["payload"]["goal_test"]["status"] == "taken_out"
    assert not (workspace / "tests" / "test_remove.py").exists()


def test_a_wrong_test_that_came_with_right_code_is_taken_out_by_default(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B under real lorch: right code, a new test expecting an empty cart with a unit left
    _project(workspace)
    wrong = GOAL_TEST.replace("c.remove('a', 2)", "c.remove('a', 1)")
    both = json.dumps({"summary": "remove", "files": [{"path": "cart.py", "content": CART + "\n" + RIGHT},
                                                      {"path": "tests/test_remove.py", "content": wrong}]})
    agent = spawn("builder", "--answers", "json", "--test-command", PYTEST, replies=[both, both, both])
    out = agent.run(make_command("implement", inputs={"goal": GOAL}))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["tests"]["status"] == "pass"
    assert done["payload"]["tests_taken_out"]["files"] == ["tests/test_remove.py"]
    assert done["payload"]["files"] == ["cart.py"] and not (workspace / "tests" / "test_remove.py").exists()
    assert "goal_test" not in done["payload"] and done["payload"]["usage"]["calls"] == 3


def test_when_the_old_tests_fail_too_the_whole_change_is_withdrawn_if_they_passed_before(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-0.5B under real lorch: a right fix, then an implement_changes that broke a neighbour
    _project(workspace)
    broken = CART.replace("self.items.get(name, 0) + n", "n + 1") + "\n" + RIGHT  # add() counts one too many
    both = json.dumps({"summary": "remove", "files": [{"path": "cart.py", "content": broken},
                                                      {"path": "tests/test_remove.py", "content": GOAL_TEST},
                                                      {"path": "tests/test_cart.py", "content": OLD_TEST + "\n"}]})
    agent = spawn("builder", "--answers", "json", "--test-command", PYTEST, "--test-repairs", "0", replies=[both])
    out = agent.run(make_command("implement_changes", inputs={"goal": GOAL}))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["tests"]["status"] == "pass"
    assert "tests_taken_out" not in done["payload"] and done["payload"]["files"] == []
    reverted = done["payload"]["changes_reverted"]
    assert reverted["files"] == ["cart.py", "tests/test_cart.py", "tests/test_remove.py"]
    assert "failed" in reverted["output_tail"]
    assert done["payload"]["summary"].startswith("Change withdrawn: it failed the project's tests after the repairs")
    assert (workspace / "cart.py").read_text() == CART and (workspace / "tests" / "test_cart.py").read_text() == OLD_TEST
    assert not (workspace / "tests" / "test_remove.py").exists()
    warns = [m["message"] for m in out if m.get("kind") == "log" and m.get("level") == "warn"]
    assert any("the change was withdrawn" in w for w in warns)


def test_when_the_tests_failed_before_the_change_too_the_failure_stands_as_written(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    (workspace / "tests" / "test_cart.py").write_text(OLD_TEST.replace("{'a': 2}", "{'a': 5}"))  # failing already
    broken = CART.replace("self.items.get(name, 0) + n", "n + 1") + "\n" + RIGHT
    both = json.dumps({"summary": "remove", "files": [{"path": "cart.py", "content": broken},
                                                      {"path": "tests/test_remove.py", "content": GOAL_TEST}]})
    agent = spawn("builder", "--answers", "json", "--test-command", PYTEST, "--test-repairs", "0", replies=[both])
    done = events(agent.run(make_command("implement", inputs={"goal": GOAL})), "builder.completed")[-1]
    assert done["payload"]["tests"]["status"] == "fail"
    assert "tests_taken_out" not in done["payload"] and "changes_reverted" not in done["payload"]
    assert (workspace / "tests" / "test_remove.py").read_text() == GOAL_TEST
    assert (workspace / "cart.py").read_text() == broken
    assert sorted(done["payload"]["files"]) == ["cart.py", "tests/test_remove.py"]


def test_the_goal_test_cannot_change_code_and_runs_beside_a_test_the_change_brought(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    _project(workspace)
    sneaky = json.dumps({"summary": "t", "files": [{"path": "cart.py", "content": "x = 1\n"}]})
    own_test = GOAL_TEST.replace("c.remove('a', 2)", "c.remove('a', 1)").replace("'a' not in c.items", "c.items == {'a': 1}")
    own = json.dumps({"summary": "remove", "files": [{"path": "cart.py", "content": CART + "\n" + SLIP},
                                                     {"path": "tests/test_own.py", "content": own_test}]})
    agent = spawn("builder", "--answers", "json", "--test-command", PYTEST, "--add-tests", "goal",
                  replies=[sneaky, _test("tests/test_remove.py", GOAL_TEST), own, _code(RIGHT)])
    out = agent.run(make_command("implement", inputs={"goal": GOAL}))
    done = events(out, "builder.completed")[-1]
    # the change's own test missed the slip; the goal test beside it caught it, and the repair fixed it
    assert done["payload"]["tests"]["status"] == "pass" and done["payload"]["test_repairs"] == 1
    assert done["payload"]["goal_test"] == {"status": "kept", "files": ["tests/test_remove.py"]}
    assert (workspace / "tests" / "test_remove.py").read_text() == GOAL_TEST
    assert (workspace / "tests" / "test_own.py").read_text() == own_test
    assert "x = 1" not in (workspace / "cart.py").read_text()
    nothing = json.dumps({"summary": "n", "no_changes_reason": "nothing to do"})
    agent = spawn("builder", "--answers", "json", "--test-command", PYTEST, "--add-tests", "goal",
                  replies=[_test("tests/test_x.py", GOAL_TEST), nothing])
    out = agent.run(make_command("implement", inputs={"goal": GOAL}, task_id="T-0002"))
    assert any(e.get("message") == "goal test not used: the change wrote no code" for e in out)
    assert not (workspace / "tests" / "test_x.py").exists()


def test_no_goal_test_for_implement_changes_or_without_project_tests(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "cart.py").write_text(CART)
    agent = spawn("builder", "--answers", "json", "--test-command", "true", "--add-tests", "goal", replies=[_code(RIGHT)])
    done = events(agent.run(make_command("implement", inputs={"goal": GOAL})), "builder.completed")[-1]
    assert done["payload"]["usage"]["calls"] == 1 and "goal_test" not in done["payload"]
