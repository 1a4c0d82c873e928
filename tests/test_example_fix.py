"""When the goal's examples fail: the function asked for alone, judged by the examples before it is written.

End-to-end through the real builder subprocess against a scripted model; the requests it sent are
read back from `--record`, the files from disk.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from support import events, make_command

from agent.roles.example_fix import function_from_reply

BUGGY = ('"""Temperatures."""\n\n\ndef c_to_f(c):\n    """Convert."""\n    return c * 9 / 5 + 32\n\n\n'
         'def f_to_c(f):\n    """Convert back."""\n    return f - 32 * 5 / 9\n')
GOAL = {"goal": "Fix f_to_c in temp.py: f_to_c(212) must return 100.0 and f_to_c(32) must return 0.0, but "
                "today they return 194.22 and 14.22."}
QUOTED_BACK = json.dumps({"summary": "fixed", "edits": [{"path": "temp.py", "old": "f - 32 * 5 / 9",
                                                         "new": "f - 32 * (5 / 9)"}]})
RIGHT = "```python\ndef f_to_c(f):\n    # (f - 32) * 5 / 9\n    return (f - 32) * 5 / 9\n```"
WRONG = "```python\ndef f_to_c(f):\n    return f - 32 * 5 / 9 + 1\n```"


def _rows(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_wrong_function_is_asked_for_alone_and_the_candidate_that_holds_is_written(spawn, workspace: Path,
                                                                                     tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "temp.py").write_text(BUGGY)
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--record", str(rec), "--test-command", "true", replies=[QUOTED_BACK, WRONG, RIGHT])
    out = agent.run(make_command("implement", inputs=GOAL))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["tests"]["status"] == "pass"
    assert done["payload"]["rewritten_for_examples"] == ["f_to_c"]
    assert done["payload"]["goal_examples"] == {"held": 2, "of": 2, "failed": []}
    text = (workspace / "temp.py").read_text()
    assert "return (f - 32) * 5 / 9" in text and "+ 1" not in text  # the wrong candidate never reached the disk
    assert 'def c_to_f(c):\n    """Convert."""\n    return c * 9 / 5 + 32' in text  # the rest of the module kept
    # the last artifact.produced is the file as it is on disk
    last = events(out, "artifact.produced")[-1]
    assert last["artifacts"][0]["sha256"] == "sha256:" + hashlib.sha256((workspace / "temp.py").read_bytes()).hexdigest()
    rows = _rows(rec)
    first, second = rows[1]["request"], rows[2]["request"]
    # first candidate: the body shown with what it returns, at the default temperature
    assert "Module temp.py, as it is now:" in first["messages"][1]["content"]
    assert "- f_to_c(212) returned 194.22222222222223" in first["messages"][1]["content"]
    assert "Each of these must hold:\n- f_to_c(212) == 100.0\n- f_to_c(32) == 0.0" in first["messages"][1]["content"]
    assert first["temperature"] == 0.2
    # second: wider, the body left out, the wrong candidate and what it returned
    user = second["messages"][1]["content"]
    assert second["temperature"] == 0.8
    assert 'Module temp.py, with the body of `f_to_c` left out:' in user
    assert '    """Convert back."""\n    ...\n' in user and "f - 32 * (5 / 9)" not in user
    assert "Tried before, and wrong:" in user and "- f_to_c(212) returned 195.22222222222223; the goal says 100.0" in user


def test_no_candidate_that_holds_leaves_the_answer_and_reports_the_examples(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "temp.py").write_text(BUGGY)
    prose = "The function looks right to me."
    agent = spawn("builder", "--test-command", "true", "--test-repairs", "0", "--example-tries", "2",
                  replies=[QUOTED_BACK, WRONG, prose])
    out = agent.run(make_command("implement", inputs=GOAL))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and "rewritten_for_examples" not in done["payload"]
    assert done["payload"]["goal_examples"]["held"] == 0
    assert "f - 32 * (5 / 9)" in (workspace / "temp.py").read_text()
    warns = [m for m in out if m.get("kind") == "log" and m.get("level") == "warn"]
    assert any("no version of f_to_c made the goal's examples hold" in e["message"] for e in warns)


def test_without_a_valid_answer_the_function_alone_still_does_the_task(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # run Y of the 1.5B: three invalid answers, then invalid_model_response, the task lost
    (workspace / "temp.py").write_text(BUGGY)
    bad = json.dumps({"summary": "x", "files": ["temp.py"]})
    agent = spawn("builder", "--test-command", "true", "--max-repairs", "1", replies=[bad, bad, RIGHT])
    out = agent.run(make_command("implement", inputs=GOAL))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["answer_via"] == "examples"
    assert done["payload"]["rewritten_for_examples"] == ["f_to_c"]
    assert done["payload"]["summary"].startswith("Rewrote f_to_c so that the goal's examples hold")
    assert "return (f - 32) * 5 / 9" in (workspace / "temp.py").read_text()


def test_a_candidate_that_breaks_on_import_or_raises_is_judged_wrong_and_not_written(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "temp.py").write_text(BUGGY)
    raises = "```python\ndef f_to_c(f):\n    raise SystemExit(0)\n```"
    imports = "```python\nimport no_such_module_here\n\ndef f_to_c(f):\n    return (f - 32) * 5 / 9\n```"
    agent = spawn("builder", "--test-command", "true", "--test-repairs", "0", replies=[QUOTED_BACK, raises, imports, RIGHT])
    done = events(agent.run(make_command("implement", inputs=GOAL)), "builder.completed")[-1]
    assert done["payload"]["rewritten_for_examples"] == ["f_to_c"]
    text = (workspace / "temp.py").read_text()
    assert "no_such_module_here" not in text and "SystemExit" not in text


def test_examples_tries_zero_turns_it_off(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "temp.py").write_text(BUGGY)
    agent = spawn("builder", "--test-command", "true", "--test-repairs", "0", "--example-tries", "0",
                  replies=[QUOTED_BACK])
    done = events(agent.run(make_command("implement", inputs=GOAL)), "builder.completed")[-1]
    assert "rewritten_for_examples" not in done["payload"] and done["payload"]["goal_examples"]["held"] == 0


def test_the_reply_gives_its_function_and_imports_not_the_neighbours_it_wrote_again() -> None:
    reply = ("Here it is:\n```python\nimport math\n\ndef c_to_f(c):\n    return 0\n\n"
             "def f_to_c(f):\n    return math.floor((f - 32) * 5 / 9)\n\ndef _helper():\n    return 1\n```\nDone.")
    fragment = function_from_reply(reply, "f_to_c", {"c_to_f"})
    assert fragment == ("import math\n\n\ndef f_to_c(f):\n    return math.floor((f - 32) * 5 / 9)\n\n\n"
                        "def _helper():\n    return 1\n")
    assert function_from_reply("def other():\n    pass\n", "f_to_c") is None
    assert function_from_reply("```python\ndef f_to_c(f):\n  return (f", "f_to_c") is None  # cut off: no parse
    assert function_from_reply("    def f_to_c(f):\n        return f\n", "f_to_c") == "def f_to_c(f):\n    return f\n"


def test_a_function_that_must_raise_is_rewritten_until_it_does(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "stats.py").write_text("def mean(values):\n    return sum(values) / len(values)\n")
    goal = {"goal": "Make mean in stats.py strict: mean([]) raises ValueError, and mean([1, 2]) == 1.5 still."}
    same = json.dumps({"summary": "ok", "no_changes_reason": "mean already works"})
    raising = ("```python\ndef mean(values):\n    # empty: ValueError\n    if not values:\n"
               "        raise ValueError('mean of nothing')\n    return sum(values) / len(values)\n```")
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--record", str(rec), "--test-command", "true", replies=[same, raising])
    done = events(agent.run(make_command("implement", inputs=goal)), "builder.completed")[-1]
    assert done["payload"]["rewritten_for_examples"] == ["mean"]
    assert done["payload"]["goal_examples"] == {"held": 2, "of": 2, "failed": []}
    assert "raise ValueError('mean of nothing')" in (workspace / "stats.py").read_text()
    asked = _rows(rec)[1]["request"]["messages"][1]["content"]
    assert "Each of these must hold:\n- mean([1, 2]) == 1.5\n- mean([]) raises ValueError" in asked
    assert "- mean([]) returned ZeroDivisionError: division by zero" in asked
