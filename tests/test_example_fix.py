"""When the goal's examples fail: the function asked for alone, judged by the examples before it is written.

End-to-end through the real builder subprocess against a scripted model; the requests it sent are
read back from `--record`, the files from disk.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from support import events, make_command

from agent.roles.example_fix import function_from_reply, variant_calls

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


def test_a_bug_the_examples_define_is_fixed_by_asking_for_the_function_alone(spawn, workspace: Path,
                                                                          tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "temp.py").write_text(BUGGY)
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--record", str(rec), "--test-command", "true", replies=[WRONG, RIGHT])
    out = agent.run(make_command("implement", inputs=GOAL))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["tests"]["status"] == "pass"
    assert done["payload"]["rewritten_for_examples"] == ["f_to_c"]
    assert done["payload"]["answer_via"] == "examples" and done["payload"]["answer_form"] == "function"
    assert done["payload"]["summary"] == ("Rewrote f_to_c so that the goal's examples hold: f_to_c(212) == 100.0; "
                                          "f_to_c(32) == 0.0")
    assert done["payload"]["goal_examples"] == {"held": 2, "of": 2, "failed": []}
    text = (workspace / "temp.py").read_text()
    assert "return (f - 32) * 5 / 9" in text and "+ 1" not in text  # the wrong candidate never reached the disk
    assert 'def c_to_f(c):\n    """Convert."""\n    return c * 9 / 5 + 32' in text  # the rest of the module kept
    produced = events(out, "artifact.produced")
    assert len(produced) == 1 and produced[0]["artifacts"][0]["sha256"] == \
        "sha256:" + hashlib.sha256((workspace / "temp.py").read_bytes()).hexdigest()
    rows = _rows(rec)
    assert len(rows) == 2  # no JSON answer was asked for
    first, second = rows[0]["request"], rows[1]["request"]
    # first candidate: a short function's body left out (the 0.5B copied it back), what it returns now,
    # at the default temperature
    assert "Module temp.py, with the body of `f_to_c` left out:" in first["messages"][1]["content"]
    assert "- f_to_c(212) returned 194.22222222222223" in first["messages"][1]["content"]
    assert "Each of these must hold:\n- f_to_c(212) == 100.0\n- f_to_c(32) == 0.0" in first["messages"][1]["content"]
    assert first["temperature"] == 0.2
    # second: wider, the body left out, the wrong candidate and what it returned
    user = second["messages"][1]["content"]
    assert second["temperature"] == 0.8
    assert 'Module temp.py, with the body of `f_to_c` left out:' in user
    assert '    """Convert back."""\n    ...\n' in user and "f - 32 * 5 / 9\n" not in user.split("Tried before")[0]
    assert "Earlier answers were wrong (write it anew, differently):\n- f_to_c(212) returned 195.22222222222223; " \
           "the goal says 100.0" in user
    assert "+ 1" not in user  # what the wrong candidate returned, not its code (the 0.5B copied its own)


def test_when_no_candidate_holds_the_usual_answer_is_asked_for(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "temp.py").write_text(BUGGY)
    prose = "The function looks right to me."
    agent = spawn("builder", "--answers", "json", "--test-command", "true", "--test-repairs", "0", "--example-tries", "2",
                  replies=[WRONG, prose, QUOTED_BACK])
    out = agent.run(make_command("implement", inputs=GOAL))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and "rewritten_for_examples" not in done["payload"]
    assert done["payload"]["answer_via"] == "json" and done["payload"]["goal_examples"]["held"] == 0
    assert "f - 32 * (5 / 9)" in (workspace / "temp.py").read_text()
    warns = [m for m in out if m.get("kind") == "log" and m.get("level") == "warn"]
    assert any("no version of f_to_c made the goal's examples hold" in e["message"] for e in warns)


def test_a_new_function_whose_examples_fail_after_the_answer_is_asked_for_alone(spawn, workspace: Path,
                                                                               tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # new-stats under real lorch: the 1.5B's mean divided by zero for [], the goal says ValueError
    (workspace / "mathutil.py").write_text("def mean(v):\n    return 0\n")  # another module's mean is not touched
    goal = {"goal": "Create stats.py with mean(values): mean([1, 2, 3, 4]) == 2.5, and mean([]) raises ValueError."}
    answer = json.dumps({"summary": "stats", "files": [{"path": "stats.py",
                                                        "content": "def mean(values):\n    return sum(values) / len(values)\n"}]})
    raising = ("```python\ndef mean(values):\n    # empty: ValueError\n    if not values:\n"
               "        raise ValueError('mean of nothing')\n    return sum(values) / len(values)\n```")
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--record", str(rec), "--test-command", "true", replies=[answer, raising])
    done = events(agent.run(make_command("implement", inputs=goal)), "builder.completed")[-1]
    assert done["payload"]["answer_via"] == "json" and done["payload"]["rewritten_for_examples"] == ["mean"]
    assert done["payload"]["goal_examples"] == {"held": 2, "of": 2, "failed": []}
    assert "raise ValueError('mean of nothing')" in (workspace / "stats.py").read_text()
    assert (workspace / "mathutil.py").read_text() == "def mean(v):\n    return 0\n"
    asked = _rows(rec)[1]["request"]["messages"][1]["content"]
    assert "Each of these must hold:\n- mean([1, 2, 3, 4]) == 2.5\n- mean([]) raises ValueError" in asked
    assert "- mean([]) returned ZeroDivisionError: division by zero" in asked


def test_without_a_valid_answer_to_the_review_the_function_alone_still_does_it(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # run Y of the 1.5B: three invalid answers, then invalid_model_response, the task lost
    (workspace / "temp.py").write_text(BUGGY)
    bad = json.dumps({"summary": "x", "files": ["temp.py"]})
    agent = spawn("builder", "--answers", "json", "--test-command", "true", "--max-repairs", "1", replies=[bad, bad, RIGHT])
    out = agent.run(make_command("implement_changes", inputs=GOAL))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["answer_via"] == "examples"
    assert done["payload"]["rewritten_for_examples"] == ["f_to_c"]
    assert done["payload"]["summary"].startswith("Rewrote f_to_c so that the goal's examples hold (no valid whole")
    assert "return (f - 32) * 5 / 9" in (workspace / "temp.py").read_text()


def test_a_candidate_that_breaks_on_import_or_raises_is_judged_wrong_and_not_written(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "temp.py").write_text(BUGGY)
    raises = "```python\ndef f_to_c(f):\n    raise SystemExit(0)\n```"
    imports = "```python\nimport no_such_module_here\n\ndef f_to_c(f):\n    return (f - 32) * 5 / 9\n```"
    agent = spawn("builder", "--answers", "json", "--test-command", "true", "--test-repairs", "0", replies=[raises, imports, RIGHT])
    done = events(agent.run(make_command("implement", inputs=GOAL)), "builder.completed")[-1]
    assert done["payload"]["rewritten_for_examples"] == ["f_to_c"]
    text = (workspace / "temp.py").read_text()
    assert "no_such_module_here" not in text and "SystemExit" not in text


def test_examples_tries_zero_turns_it_off(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "temp.py").write_text(BUGGY)
    agent = spawn("builder", "--answers", "json", "--test-command", "true", "--test-repairs", "0", "--example-tries", "0",
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



def test_a_new_module_the_examples_define_is_written_function_by_function(spawn, workspace: Path,
                                                                         tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    goal = {"goal": "Create a new module stats.py with mean(values) and median(values); both raise ValueError for "
                    "an empty list. Example: mean([1, 2, 3, 4]) == 2.5, median([3, 1, 2]) == 2, "
                    "median([4, 1, 3, 2]) == 2.5, mean([]) raises ValueError."}
    mean = ("```python\ndef mean(values):\n    # sum over count\n    if not values:\n        raise ValueError('empty')\n"
            "    return sum(values) / len(values)\n```")
    median_wrong = "```python\ndef median(values):\n    return sorted(values)[len(values) // 2]\n```"
    median = ("```python\ndef median(values):\n    # middle of the sorted values\n    s = sorted(values)\n"
              "    n = len(s)\n    return s[n // 2] if n % 2 else mean(s[n // 2 - 1:n // 2 + 1])\n```")
    rec = tmp_path / "rec.jsonl"
    # each function that holds is asked for once more and the two compared on inputs near the examples'
    agent = spawn("builder", "--answers", "json", "--record", str(rec), "--test-command", "true",
                  replies=[mean, mean, median_wrong, median, median])
    out = agent.run(make_command("implement", inputs=goal))
    done = events(out, "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["answer_via"] == "examples"
    assert done["payload"]["rewritten_for_examples"] == ["mean", "median"]
    assert done["payload"]["summary"].startswith("Wrote stats.py with mean, median so that the goal's examples hold")
    assert done["payload"]["goal_examples"] == {"held": 4, "of": 4, "failed": []}
    text = (workspace / "stats.py").read_text()
    assert "raise ValueError('empty')" in text and "mean(s[n // 2 - 1:n // 2 + 1])" in text
    assert text.startswith("def mean(values):")  # no blank lines before the first definition
    assert "sorted(values)[len(values) // 2]" not in text
    assert oct((workspace / "stats.py").stat().st_mode & 0o777) == "0o600"  # a file the agent creates
    rows = _rows(rec)
    assert len(rows) == 5
    first = rows[0]["request"]["messages"][1]["content"]
    assert "Module stats.py does not exist yet." in first and "Write `def mean(values):`" in first
    assert "Each of these must hold:\n- mean([1, 2, 3, 4]) == 2.5\n- mean([]) raises ValueError" in first
    second = rows[2]["request"]["messages"][1]["content"]
    assert "Module stats.py, so far (each function checked against the goal's examples):" in second
    assert "raise ValueError('empty')" in second and "Write `def median(values):`" in second


def test_a_goal_that_calls_more_than_its_examples_or_names_no_new_file_gets_the_usual_answer(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    answer = json.dumps({"summary": "fizz", "files": [{"path": "fizz.py", "content": "def fizz(n):\n    return 'Fizz'\n"}]})
    for n, goal in enumerate(("Create fizz.py with fizz(n) and buzz(n); fizz(3) == 'Fizz'.",  # buzz: no example
                              "Write fizz(n); fizz(3) == 'Fizz'.")):  # no file named
        (workspace / "fizz.py").unlink(missing_ok=True)
        agent = spawn("builder", "--answers", "json", "--test-command", "true", "--test-repairs", "0", replies=[answer])
        done = events(agent.run(make_command("implement", task_id=f"T-{n}", inputs={"goal": goal})),
                      "builder.completed")[-1]
        assert done["payload"]["answer_via"] == "json", goal


def test_a_one_line_function_is_asked_for_by_its_signature(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the 0.5B's stats.py: `def mean(values): return ...` on one line, asked for as "Write `` ..."
    (workspace / "temp.py").write_text("def f_to_c(f): return f - 32 * 5 / 9\n")
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--record", str(rec), "--test-command", "true", replies=[WRONG, RIGHT])
    done = events(agent.run(make_command("implement", inputs=GOAL)), "builder.completed")[-1]
    assert done["payload"]["rewritten_for_examples"] == ["f_to_c"]
    asked = [r["request"]["messages"][1]["content"] for r in _rows(rec)]
    assert all("Write `def f_to_c(f):` with its body" in a for a in asked)
    assert "Module temp.py, with the body of `f_to_c` left out:\n```python\ndef f_to_c(f): ...\n```" in asked[1]


FIZZ_GOAL = {"goal": "Create fizz.py with fizz(n): a list of n strings for 1 to n, Fizz for multiples of 3, Buzz "
                     "for 5, FizzBuzz for both. Example: fizz(5) == ['1', '2', 'Fizz', '4', 'Buzz']."}
FIZZ_SLIP = ("```python\ndef fizz(n):\n    # 3 first, then 5\n    return ['Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 "
             "else str(i) for i in range(1, n + 1)]\n```")
FIZZ_RIGHT = ("```python\ndef fizz(n):\n    # both first\n    return ['FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 "
              "else 'Buzz' if i % 5 == 0 else str(i) for i in range(1, n + 1)]\n```")


FIZZ_REVERSED = ("```python\ndef fizz(n):\n    out = ['FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 "
                 "else 'Buzz' if i % 5 == 0 else str(i) for i in range(1, n + 1)]\n    return out[::-1] if n > 5 else out\n```")


def _chosen_log(out: list[dict]) -> dict:  # type: ignore[type-arg]
    [chosen] = [m for m in out if m.get("kind") == "log" and m.get("message") == "fizz written: the goal's examples hold"]
    return chosen


def test_of_two_versions_that_hold_the_one_returning_more_of_the_goals_strings_wins(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B and 0.5B under real lorch: fizzbuzz without "FizzBuzz" while fizzbuzz(5), the one
    # example, held; in runs AH and gram3 two of three candidates shared that slip and outvoted the right one
    for n, replies in enumerate(([FIZZ_SLIP, FIZZ_RIGHT, FIZZ_SLIP], [FIZZ_RIGHT, FIZZ_SLIP, FIZZ_SLIP])):
        (workspace / "fizz.py").unlink(missing_ok=True)
        agent = spawn("builder", "--answers", "json", "--test-command", "true", replies=replies)
        out = agent.run(make_command("implement", task_id=f"T-{n}", inputs=FIZZ_GOAL))
        done = events(out, "builder.completed")[-1]
        assert done["payload"]["rewritten_for_examples"] == ["fizz"] and done["payload"]["usage"]["calls"] == 2
        assert "FizzBuzz" in (workspace / "fizz.py").read_text(), replies
        assert _chosen_log(out)["fields"]["versions_compared"] == 2
    audit = [json.loads(line) for line in (workspace / "logs/luallm-agent/audit.jsonl").read_text().splitlines()]
    probes = [a for a in audit if a["event"] == "example_fix_probe"]
    assert len({p["behaviour"] for p in probes}) == 2  # the slip and the right one differ on fizz(15)
    assert [a["counts"] for a in audit if a["event"] == "example_fix_goal_outputs"] == [[2, 3], [3, 2]]


def test_two_versions_that_differ_but_return_as_many_of_the_goals_strings_are_decided_by_a_third(
        spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", "--answers", "json", "--test-command", "true", replies=[FIZZ_REVERSED, FIZZ_RIGHT, FIZZ_RIGHT])
    out = agent.run(make_command("implement", inputs=FIZZ_GOAL))
    done = events(out, "builder.completed")[-1]
    assert done["payload"]["usage"]["calls"] == 3 and "[::-1]" not in (workspace / "fizz.py").read_text()
    assert _chosen_log(out)["fields"]["versions_compared"] == 3


def test_two_versions_that_agree_near_the_examples_settle_it_at_once(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", "--answers", "json", "--test-command", "true", replies=[FIZZ_RIGHT, FIZZ_RIGHT.replace("# both first", "# 15")])
    done = events(agent.run(make_command("implement", inputs=FIZZ_GOAL)), "builder.completed")[-1]
    assert done["payload"]["usage"]["calls"] == 2 and "# both first" in (workspace / "fizz.py").read_text()


def test_inputs_near_the_examples_vary_one_argument_at_a_time() -> None:
    from agent.roles.goal_examples import examples_in

    calls = variant_calls(examples_in(["fizz(5) == ['1']", "pal('A b') == True", "m([1, 2], True) == 1"]))
    assert calls[:3] == ["0", "1", "2"] and "15" in calls and len(calls) <= 12
    assert variant_calls(examples_in(["pal('A b') == True"])) == ["''", "'A B'", "'b A'", "'A b!'", '"\'A b"', "'A-b'"]
    assert variant_calls(examples_in(["m([1, 2], True) == 1"]))[:2] == ["[], True", "[1], True"]
    assert variant_calls(examples_in(["now() == 1"])) == []
    assert "[1, 2, 3, 4, 41]" in variant_calls(examples_in(["mean([1, 2, 3, 4]) == 2.5"]))  # mean vs median


def test_a_long_function_is_shown_whole_to_the_first_candidate_only(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    body = "".join(f"    step{i} = {i}\n" for i in range(16))
    (workspace / "temp.py").write_text(f"def f_to_c(f):\n{body}    return f - 32 * 5 / 9\n")
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--record", str(rec), "--test-command", "true", replies=[WRONG, RIGHT])
    events(agent.run(make_command("implement", inputs=GOAL)), "builder.completed")
    asked = [r["request"]["messages"][1]["content"] for r in _rows(rec)]
    assert "Module temp.py, as it is now:" in asked[0] and "step15 = 15" in asked[0]
    assert "with the body of `f_to_c` left out" in asked[1] and "step15" not in asked[1]


QUOTED_FIZZ_GOAL = {"goal": 'Create fizz.py with fizz(n): a list of n strings for 1 to n, "Fizz" for multiples of 3, '
                            '"Buzz" for 5, "FizzBuzz" for both. Example: fizz(5) == ["1", "2", "Fizz", "4", "Buzz"].'}


def test_versions_that_never_return_a_string_the_goal_quotes_are_asked_again_with_that_said(
        spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-0.5B under real lorch (run gram4): both versions returned "Fizz" and "Buzz", never
    # "FizzBuzz" (not even for fizz(15)), agreed with each other, and were written
    rec = tmp_path / "rec.jsonl"
    agent = spawn("builder", "--answers", "json", "--test-command", "true", "--record", str(rec),
                  replies=[FIZZ_SLIP, FIZZ_SLIP, FIZZ_RIGHT, FIZZ_RIGHT])
    out = agent.run(make_command("implement", inputs=QUOTED_FIZZ_GOAL))
    done = events(out, "builder.completed")[-1]
    assert "FizzBuzz" in (workspace / "fizz.py").read_text() and done["payload"]["usage"]["calls"] == 4
    third = [json.loads(x)["request"]["messages"][-1]["content"] for x in rec.read_text().splitlines()][2]
    assert '- it never returned "FizzBuzz", which the goal names, for any of fizz(0), fizz(1),' in third
    audit = [json.loads(x) for x in (workspace / "logs/luallm-agent/audit.jsonl").read_text().splitlines()]
    assert [a["missing"] for a in audit if a["event"] == "example_fix_goal_strings"] == [["FizzBuzz"], ["FizzBuzz"]]


def test_when_no_version_returns_every_quoted_string_one_that_holds_is_still_written(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", "--answers", "json", "--test-command", "true", replies=[FIZZ_SLIP] * 5)
    done = events(agent.run(make_command("implement", inputs=QUOTED_FIZZ_GOAL)), "builder.completed")[-1]
    assert done["payload"]["rewritten_for_examples"] == ["fizz"] and done["payload"]["usage"]["calls"] == 3
    assert "'Fizz' if i % 3" in (workspace / "fizz.py").read_text()
