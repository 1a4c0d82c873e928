"""The goal's own examples (`f(212) must return 100.0`), found in the inputs and run on the code.

End-to-end through the real builder subprocess against a scripted model; the requests it sent
are read back from `--record`.
"""

from __future__ import annotations

import json
from pathlib import Path

from support import events, make_command

from agent.roles.goal_examples import examples_in

BUGGY = 'def f_to_c(f):\n    """Convert."""\n    return f - 32 * 5 / 9\n'
GOAL = {"goal": "Fix f_to_c in temp.py: f_to_c(212) must return 100.0 and f_to_c(32) must return 0.0, but "
                "today they return 194.22 and 14.22."}


def test_examples_are_calls_with_literal_arguments_and_a_literal_result() -> None:
    found = examples_in(['mean([1, 2, 3, 4]) == 2.5, median([3, 1, 2]) == 2. is_palindrome("a, b: c") returns True; '
                         'keep add() and total() working; f(x) == 2; g(1) is computed; h(1) should still return "x".'])
    assert [(e.call, e.expected) for e in found] == [("mean([1, 2, 3, 4])", "2.5"), ("median([3, 1, 2])", "2"),
                                                     ('is_palindrome("a, b: c")', "True"), ('h(1)', '"x"')]
    assert [e.call for e in examples_in([GOAL["goal"]])] == ["f_to_c(212)", "f_to_c(32)"]  # not "they return"
    # what the code does today is no example of what it should do
    found = examples_in(["Today status() returns 'ok'; status() should return 'ready'. f(1) returns 3 today. "
                         "g(2) returns 4 at the moment, but g(2) must return 5."])
    assert [(e.call, e.expected) for e in found] == [("status()", "'ready'"), ("g(2)", "5")]


def _requests(path: Path) -> list[str]:
    return [json.loads(line)["request"]["messages"][-1]["content"] for line in path.read_text().splitlines()]


def test_the_reviewer_sees_the_examples_but_they_never_overrule_its_verdict(spawn, workspace: Path,
                                                                         tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Examples read out of a goal's prose may describe the bug rather than the fix ("returns X and
    # loses host"): they guide the prompt, the reviewer's verdict stands.
    (workspace / "temp.py").write_text(BUGGY)
    approve = json.dumps({"status": "approved", "summary": "looks right", "findings": []})
    rec = tmp_path / "rec.jsonl"
    agent = spawn("reviewer", "--record", str(rec), "--test-command", "true", replies=[approve])
    done = events(agent.run(make_command("review", inputs=GOAL)), "review.completed")[-1]
    assert done["status"] == "approved" and done["payload"]["findings"] == []
    assert json.loads((workspace / "reviews" / "T-0001.json").read_text())["status"] == "approved"
    prompt = _requests(rec)[0]
    assert "## The goal's own examples, run on the code now by the agent\n- f_to_c(212): returned 194.22" in prompt
    assert '"name":"goal_examples"' in (workspace / "logs/luallm-agent/audit.jsonl").read_text().replace(" ", "")


def test_with_goal_examples_off_no_prompt_shows_them(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "temp.py").write_text(BUGGY)
    approve = json.dumps({"status": "approved", "summary": "looks right", "findings": []})
    rec = tmp_path / "rec.jsonl"
    agent = spawn("reviewer", "--record", str(rec), "--test-command", "true", "--disable-repair", "goal_examples",
                  replies=[approve])
    assert events(agent.run(make_command("review", inputs=GOAL)), "review.completed")[-1]["status"] == "approved"
    assert "The goal's own examples" not in _requests(rec)[0]


def test_an_exception_the_goal_names_is_an_example_too() -> None:
    found = examples_in(["mean([]) raises ValueError; median([]) must raise a ValueError. Today f(0) raises "
                         "KeyError. g(1) should still raise TypeError, h('x') raises ValueError instead."])
    assert [e.claim for e in found] == ["mean([]) raises ValueError", "median([]) raises ValueError",
                                        "g(1) raises TypeError"]


def test_a_review_plan_reads_the_examples_the_agent_ran_from_its_context(spawn, workspace: Path,
                                                                        tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # The worked example's plan, sent back as it is (what the 0.5B does with any example), reviews any
    # task by the goal's own examples: it is not taken for a copy about another project.
    example = (Path(__file__).resolve().parents[1] / "agent/roles/examples/reviewer.review.lua").read_text()
    plan = f"```lua\n{example}```"
    (workspace / "temp.py").write_text(BUGGY)
    rec = tmp_path / "rec.jsonl"
    agent = spawn("reviewer", "--answers", "plan", "--record", str(rec), "--test-command", "true",
                  replies=[plan, plan])
    done = events(agent.run(make_command("review", inputs=GOAL)), "review.completed")[-1]
    assert done["status"] == "changes_requested" and done["payload"]["answer_via"] == "lua"
    assert done["payload"]["findings"] == [
        {"path": "temp.py", "line": 1, "comment": "f_to_c(212) returned 194.22222222222223; the goal says 100.0"},
        {"path": "temp.py", "line": 1, "comment": "f_to_c(32) returned 14.222222222222221; the goal says 0.0"}]
    first = "\n".join(m["content"] for m in json.loads(rec.read_text().splitlines()[0])["request"]["messages"])
    assert "for a review or a spec update also examples: the goal's examples as\nthe agent ran them" in first
    assert "- greet(\"Ada\"): returned 'Hello Ada'; the goal says 'Hello, Ada!'" in first  # the example's own task
    (workspace / "temp.py").write_text(BUGGY.replace("f - 32 * 5 / 9", "(f - 32) * 5 / 9"))
    done = events(agent.run(make_command("review", task_id="T-2", inputs=GOAL)), "review.completed")[-1]
    assert done["status"] == "approved" and done["payload"]["findings"] == []
    assert done["payload"]["summary"] == "the goal's examples hold"
