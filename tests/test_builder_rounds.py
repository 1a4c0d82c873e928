"""The builder's rounds: files as text, written, tested; the failures shown; the best state kept."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

import pytest
from role_context import FakeModel, Recorded, make_context

from agent.command_context import RoleSettings
from agent.errors import InvalidModelResponse
from agent.models.base import Capabilities, ModelReply, Usage
from agent.roles import builder

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return 0\n"
TESTS = ("import unittest\n\nimport calc\n\n\nclass T(unittest.TestCase):\n"
         "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n\n"
         "    def test_mul(self):\n        self.assertEqual(calc.mul(2, 3), 6)\n")
HALF = "calc.py\n```python\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n```\n"
RIGHT = "Fixed both.\n\ncalc.py\n```python\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n```\n"
BROKEN = "calc.py\n```python\nimport nowhere_to_be_found\n\n\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n```\n"


def _ctx(tmp_path: Path, replies: list[str], rec: Recorded | None = None, rounds: int = 3):  # type: ignore[no-untyped-def]
    (tmp_path / "calc.py").write_text(CALC)
    (tmp_path / "test_calc.py").write_text(TESTS)
    settings = RoleSettings(test_command=f"{sys.executable} -m unittest -q test_calc", builder_rounds=rounds,
                            answers="text")
    model = FakeModel(list(replies))
    return make_context(tmp_path, "implement", model, inputs={"goal": "Make add and mul in calc.py right."},
                        settings=settings, record=rec), model


def _audit(tmp_path: Path, event: str) -> list[dict]:
    lines = (tmp_path / "logs/luallm-agent/audit.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("event") == event]


def test_the_failing_output_is_shown_and_the_next_round_fixes_it(tmp_path: Path) -> None:
    rec = Recorded()
    ctx, model = _ctx(tmp_path, [HALF, RIGHT], rec)
    out = builder.handle(ctx)
    assert out.event == "builder.completed" and out.payload["tests"]["status"] == "pass"
    assert out.payload["rounds"] == 2 and out.payload["answer_via"] == "text"
    assert "return a * b" in (tmp_path / "calc.py").read_text()
    # the exchange goes on: the first prompt, the reply as the model's own turn, what the tests said
    prompt, reply, said = model.requests[1].messages[1:]
    assert prompt == model.requests[0].messages[1] and (reply["role"], reply["content"]) == ("assistant", HALF)
    assert said["role"] == "user" and "The tests failed after your last change" in said["content"]
    assert "Your change is in place" in said["content"] and "return a - b" not in said["content"]
    assert "FAIL: test_mul\nTraceback" in said["content"] and "AssertionError: 5 != 6" in said["content"]  # the digest
    # every write was announced with the bytes on disk
    final = [p for e, p in rec.events if e == "artifact.produced"][-1]
    assert final["sha256"] == "sha256:" + hashlib.sha256((tmp_path / "calc.py").read_bytes()).hexdigest()


def test_without_the_conversation_the_next_prompt_shows_the_code_as_it_now_is(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [HALF, RIGHT])
    ctx.settings = dataclasses.replace(ctx.settings, disabled_repairs=frozenset({"feedback_in_conversation"}))
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and len(model.requests[1].messages) == 2
    second = model.requests[1].messages[-1]["content"]
    assert "The tests failed after your last change" in second and "FAIL: test_mul" in second
    assert "return a + b\n\n\ndef mul(a, b):\n    return a + b" in second  # the code as it now is
    assert [a["name"] for a in _audit(tmp_path, "repair_applied")] == ["reason_before_fixing"]


def test_a_long_reply_is_not_carried_into_the_next_round(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, ["Notes. " * 3000 + "\n\n" + HALF, RIGHT])
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and len(model.requests[1].messages) == 2
    assert "Notes. Notes." not in model.requests[1].messages[-1]["content"]


def test_a_round_that_makes_things_worse_is_rolled_back(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [HALF, BROKEN, "no code at all, sorry"])
    out = builder.handle(ctx)
    # HALF passes one test; BROKEN passes none (its import fails): back to HALF, which stays
    assert [r["outcome"] for r in out.payload["round_log"]] == ["kept", "rolled back", "unusable"]
    assert (tmp_path / "calc.py").read_text() == HALF.split("```python\n")[1].split("```")[0]
    assert out.payload["tests"]["status"] == "fail" and out.payload["tests"]["passed"] == 1
    # the round after the worse one starts again from the code as it was (a fresh attempt)
    third = model.requests[2].messages[-1]["content"]
    assert "return a - b" in third and "undone" not in third and model.requests[2].temperature == 0.6


def test_a_round_that_moves_nothing_forward_is_followed_by_a_fresh_attempt(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [HALF, HALF, RIGHT])  # the second reply gives the kept file back as it is
    out = builder.handle(ctx)
    assert [r["outcome"] for r in out.payload["round_log"]] == ["kept", "unusable", "kept"]
    assert out.payload["tests"]["status"] == "pass"
    third = model.requests[2].messages[-1]["content"]
    assert "return a - b" in third and "could not be used" not in third  # the code as it was, nothing else
    assert len(model.requests[2].messages) == 2  # a fresh attempt is no conversation
    assert [a["name"] for a in _audit(tmp_path, "repair_applied")] == [
        "feedback_in_conversation", "reason_before_fixing", "fresh_attempt"]
    assert "First say" not in third  # a fresh attempt is shown no failures to find the cause of


def test_a_fresh_attempt_that_gave_nothing_usable_is_not_asked_again_the_same_way(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [HALF, HALF, "nothing", RIGHT], rounds=4)
    out = builder.handle(ctx)
    assert [r["outcome"] for r in out.payload["round_log"]] == ["kept", "unusable", "unusable", "kept"]
    assert [r.get("fresh", False) for r in out.payload["round_log"]] == [False, False, True, False]
    fourth = model.requests[3].messages[-1]["content"]  # the best state, why the reply failed, the failures
    assert "return a + b\n\n\ndef mul(a, b):\n    return a + b" in fourth
    assert "could not be used" in fourth and "test_mul" in fourth


def test_a_fresh_attempt_that_did_worse_is_followed_by_the_best_code_and_its_failures(tmp_path: Path) -> None:
    # round 2 gives the kept file back; round 3, a fresh attempt, breaks the import (undone); round 4
    # is no second fresh attempt: it shows the best code and why it fails, not the undone attempt's errors
    ctx, model = _ctx(tmp_path, [HALF, HALF, BROKEN, RIGHT], rounds=4)
    out = builder.handle(ctx)
    assert [(r["outcome"], r.get("fresh", False)) for r in out.payload["round_log"]] == [
        ("kept", False), ("unusable", False), ("rolled back", True), ("kept", False)]
    fourth = model.requests[3].messages[-1]["content"]
    assert "return a + b\n\n\ndef mul(a, b):\n    return a + b" in fourth and "The tests still fail" in fourth
    assert "FAIL: test_mul" in fourth and "nowhere_to_be_found" not in fourth
    assert model.requests[3].temperature == 0.6  # the fresh attempt moved nothing: still varied
    assert out.payload["tests"]["status"] == "pass"
    assert [a["name"] for a in _audit(tmp_path, "repair_applied")].count("fresh_attempt") == 1
    assert out.payload["tests"]["status"] == "pass"


def test_a_round_that_moves_no_test_forward_is_followed_by_a_varied_one(tmp_path: Path) -> None:
    half_again = HALF.replace("return a + b\n```", "return b + a\n```")  # other code, still one test passing
    ctx, model = _ctx(tmp_path, [HALF, half_again, RIGHT], rounds=3)
    out = builder.handle(ctx)
    assert [r["outcome"] for r in out.payload["round_log"]] == ["kept", "kept", "kept"]
    greedy, low, varied = (r.temperature for r in model.requests)
    assert greedy == 0.0  # the model's most likely answer first, as the model alone asks
    assert 0.0 < low < varied  # round 1 moved a test forward, round 2 did not: round 3 is varied


def test_an_unusable_reply_costs_a_round_not_the_command(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, ["I would change calc.py to add numbers.", RIGHT])
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 2
    assert "could not be used" in model.requests[1].messages[-1]["content"]
    assert model.requests[1].temperature > model.requests[0].temperature
    assert _audit(tmp_path, "reply_unusable")[0]["round"] == 1


def test_after_a_reply_it_could_not_use_the_failures_are_still_shown(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [HALF, HALF, RIGHT])  # the second reply gives the kept file back as it is
    ctx.settings = dataclasses.replace(ctx.settings, disabled_repairs=frozenset({"fresh_attempt"}))
    out = builder.handle(ctx)
    assert [r["outcome"] for r in out.payload["round_log"]] == ["kept", "unusable", "kept"]
    third = model.requests[2].messages[-1]["content"]
    assert "could not be used" in third and "The tests still fail" in third and "test_mul" in third


def test_the_projects_tests_are_never_rewritten(tmp_path: Path) -> None:
    cheat = "test_calc.py\n```python\nimport unittest\n```\n"
    ctx, model = _ctx(tmp_path, [cheat, RIGHT])
    out = builder.handle(ctx)
    assert (tmp_path / "test_calc.py").read_text() == TESTS
    assert out.payload["tests"]["status"] == "pass"
    assert "must stay as they are" in model.requests[1].messages[-1]["content"]


def test_no_usable_reply_in_any_round_fails_the_command_with_each_reason(tmp_path: Path) -> None:
    ctx, _ = _ctx(tmp_path, ["nothing", "calc.py\n```python\ndef add(a, b:\n```\n", "still nothing"])
    with pytest.raises(InvalidModelResponse) as err:
        builder.handle(ctx)
    assert "round 1" in err.value.message and "round 3" in err.value.message
    assert (tmp_path / "calc.py").read_text() == CALC


def test_the_rounds_stop_when_the_tests_pass(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [RIGHT, HALF])
    out = builder.handle(ctx)
    assert out.payload["rounds"] == 1 and len(model.requests) == 1


def test_a_change_worse_than_the_code_as_it_was_is_withdrawn(tmp_path: Path) -> None:
    ctx, _ = _ctx(tmp_path, [BROKEN], rounds=1)
    (tmp_path / "calc.py").write_text(CALC.replace("a - b", "a + b"))  # one test passes as it is
    out = builder.handle(ctx)
    assert (tmp_path / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    assert out.payload["tests"]["passed"] == 1 and out.payload["changes_reverted"]["files"] == ["calc.py"]
    assert out.payload["summary"].startswith("Change withdrawn")


def test_a_change_that_does_the_same_is_no_change_for_implement(tmp_path: Path) -> None:
    # the tests cannot tell: one passes as it is, and a change that only reflows the code passes it too
    same = "calc.py\n```python\ndef add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    '''Product.'''\n    return 0\n```\n"
    ctx, model = _ctx(tmp_path, [same, RIGHT])
    out = builder.handle(ctx)
    assert [r["outcome"] for r in out.payload["round_log"]] == ["unusable", "kept"]
    assert "doing exactly what it did" in model.requests[1].messages[-1]["content"]


def test_the_goals_examples_guide_the_first_prompt_and_a_no_change_reply_sees_the_code(tmp_path: Path) -> None:
    same = 'calc.py\n```python\ndef add(a, b):\n    """Sum."""\n    return a - b\n\n\ndef mul(a, b):\n    return 0\n```\n'
    ctx, model = _ctx(tmp_path, [same, RIGHT])
    ctx.cmd.inputs["goal"] = "Fix calc.py: add(2, 3) must return 5 and mul(2, 3) must return 6."
    out = builder.handle(ctx)
    first, second = (r.messages[-1]["content"] for r in model.requests)
    assert "- add(2, 3): returned -1; the goal says 5" in first
    assert "The task names this code, as it is now:" in second and "def add(a, b):\n    return a - b" in second
    assert "- add(2, 3): returned -1" in second  # nothing was written yet: still what the code returns
    assert out.payload["tests"]["status"] == "pass"


def test_the_prompt_names_the_files_to_create_and_quotes_the_goal_once(tmp_path: Path) -> None:
    new = "stats.py\n```python\ndef mean(xs):\n    return sum(xs) / len(xs)\n```\n"
    ctx, model = _ctx(tmp_path, [new], rounds=1)
    ctx.cmd.inputs["goal"] = "Create a new module stats.py with mean(values); stats.mean([1, 2]) == 1.5."
    builder.handle(ctx)
    prompt = model.requests[0].messages[-1]["content"]
    assert "## Files the task names that do not exist yet (create them)\nstats.py\n" in prompt + "\n"
    assert "stats.mean" not in prompt.split("create them)")[1]  # a function, not a file
    assert prompt.count("Create a new module stats.py") == 1 and "## Inputs" not in prompt


def test_a_refused_or_echoed_file_costs_only_itself(tmp_path: Path) -> None:
    reply = (RIGHT + "\ntest_calc.py\n```python\n" + TESTS + "```\n"  # echoed as it is
             + "\nreceipts/T-0001/forged.json\n```\n{}\n```\n")          # bookkeeping: refused
    rec = Recorded()
    ctx, _ = _ctx(tmp_path, [reply], rec)
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["files"] == ["calc.py"]
    assert not (tmp_path / "receipts" / "T-0001" / "forged.json").exists()
    assert any(m == "builder round: files of the reply not written" for _, m, _ in rec.logs)


def test_a_reply_cut_inside_a_file_says_which_file_and_why_and_an_echoed_test_is_no_refusal(tmp_path: Path) -> None:
    loop = "def add(a, b):\n    return a + b\n" + "    x = 1\n" * 40  # the loop the watch stopped
    cut = ModelReply(text="test_calc.py\n```python\n" + TESTS + "```\n\ncalc.py\n```python\n" + loop,
                     model="fake", usage=Usage(1, 1, 0.0), finish_reason="repetition")
    ctx, model = _ctx(tmp_path, [cut, RIGHT])
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 2
    second = model.requests[1].messages[-1]["content"]
    assert "it was cut off while still writing calc.py (it repeated the same text over and over)" in second
    assert "the project's tests must stay as they are" not in second  # given back as it was: nothing refused


def test_a_reply_cut_off_is_not_carried_on_as_the_models_own_turn(tmp_path: Path) -> None:
    # Continuing its own looped reply, a small model writes the same loop again.
    cut = ModelReply(text="calc.py\n```python\ndef add(a, b):\n" + "    x = 1\n" * 8, model="fake",
                     usage=Usage(1, 1, 0.0), finish_reason="repetition")
    ctx, model = _ctx(tmp_path, [cut, RIGHT])
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 2
    assert [m["role"] for m in model.requests[1].messages] == ["system", "user"]
    assert "    x = 1\n" not in model.requests[1].messages[-1]["content"]
    assert _audit(tmp_path, "reply_unusable")[0]["reason"].startswith("it was cut off while still writing calc.py")
    assert "stop_looping_reply" in [a["name"] for a in _audit(tmp_path, "repair_applied")]
    assert model.requests[0].stop_loops  # asked of the client; off by name, it is not
    (tmp_path / "off").mkdir()
    ctx, model = _ctx(tmp_path / "off", [RIGHT])
    ctx.settings.disabled_repairs = frozenset({"stop_looping_reply"})
    builder.handle(ctx)
    assert not model.requests[0].stop_loops


def test_a_file_given_back_unchanged_gets_the_named_function_asked_for_alone_and_merged(tmp_path: Path) -> None:
    quoted = f"No changes needed.\n\ncalc.py\n```python\n{CALC}```\n"
    alone = "calc.py\n```python\ndef mul(a, b):\n    return a * b\n```\n"
    ctx, model = _ctx(tmp_path, [quoted, alone], rounds=2)
    ctx.cmd.inputs["goal"] = "Fix mul(a, b) in calc.py: mul(2, 3) must return 6."
    out = builder.handle(ctx)
    second = model.requests[1].messages[-1]["content"]
    assert "def mul(a, b):\n    return 0" in second and "Answer with the function you change, alone" in second
    # quoted in the shape asked for (the path before the fence): a reply copying it can be read
    assert "as it is now:\ncalc.py\n```\ndef mul(a, b):\n    return 0\n```" in second
    text = (tmp_path / "calc.py").read_text()
    assert "return a * b" in text and "def add(a, b):\n    return a - b" in text  # merged, the rest kept
    assert [r["outcome"] for r in out.payload["round_log"]][:2] == ["unusable", "kept"]


def test_a_file_given_back_while_a_test_errors_is_followed_by_a_fresh_attempt(tmp_path: Path) -> None:
    erring = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a.times(b)\n"  # AttributeError
    first = f"calc.py\n```python\n{erring}```\n"
    ctx, model = _ctx(tmp_path, [first, first, RIGHT], rounds=3)
    ctx.cmd.inputs["goal"] = "Make the tests in test_calc.py pass."  # names no function
    out = builder.handle(ctx)
    third = model.requests[2].messages[-1]["content"]
    assert "as it is now" not in third and "Answer with the function you change, alone" not in third
    assert [(r["outcome"], r.get("fresh", False)) for r in out.payload["round_log"]] == [
        ("kept", False), ("unusable", False), ("kept", True)]
    assert out.payload["tests"]["status"] == "pass"
    assert "fresh_attempt" in [a["name"] for a in _audit(tmp_path, "repair_applied")]


def test_a_function_asked_for_alone_and_given_back_unchanged_is_followed_by_a_fresh_attempt(tmp_path: Path) -> None:
    erring = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a.times(b)\n"
    first = f"calc.py\n```python\n{erring}```\n"
    same_alone = "calc.py\n```python\ndef mul(a, b):\n    return a.times(b)\n```\n"
    ctx, model = _ctx(tmp_path, [first, first, same_alone, RIGHT], rounds=4)
    ctx.cmd.inputs["goal"] = "Fix mul(a, b) so that the tests in test_calc.py pass."
    out = builder.handle(ctx)
    assert [r.get("fresh", False) for r in out.payload["round_log"]] == [False, False, False, True]
    assert model.requests[3].messages[-1]["content"] != model.requests[2].messages[-1]["content"]
    assert out.payload["tests"]["status"] == "pass"
    assert "The task names this code, as it is now:" in model.requests[2].messages[-1]["content"]


def test_the_projects_tests_are_shown_apart_from_the_files_to_change_even_when_the_goal_names_them(
        tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [RIGHT], rounds=1)
    ctx.cmd.inputs["goal"] = "Make add and mul in calc.py right: `python3 -m unittest test_calc` passes."
    builder.handle(ctx)
    prompt = model.requests[0].messages[-1]["content"]
    tests_part = prompt.split("## The project's tests (your code must pass them; never give them back)\n")[1]
    to_change = prompt.split("## Files to change (current content)\n")[1].split("\n## ")[0]
    assert "### test_calc.py" in tests_part.split("## Files to change")[0]
    assert "### calc.py" in to_change and "test_calc.py" not in to_change


def _endless_reply(tmp_path: Path, pieces: list[str], every_s: float, seconds: float):  # type: ignore[no-untyped-def]
    """The builder's one round against a real HTTP model that streams `pieces` and then repeats
    all but the first two forever; (the outcome, seconds taken)."""
    from fake_openai import FakeOpenAI, Stream

    from agent.models.openai_http import OpenAIChatModel

    fake = FakeOpenAI([Stream(pieces, every_s=every_s, forever=True, repeat_from=2)])
    with fake.running():
        ctx, _ = _ctx(tmp_path, [], rounds=1)
        ctx.model = OpenAIChatModel(fake.base_url, "m", timeout_s=5, stall_s=5, audit=ctx.audit)
        ctx.deadline = time.time() + seconds
        started = time.monotonic()
        out = builder.handle(ctx)
        return out, time.monotonic() - started


def test_a_reply_still_being_written_when_the_rounds_time_runs_out_keeps_its_whole_files(tmp_path: Path) -> None:
    # The model gives calc.py whole, then goes on and on (here: notes): at the command's deadline
    # less the time kept for testing (15 s), the reply is cut and calc.py is written and tested.
    endless = [RIGHT, "\nNOTES.md\n```text\n", "calc.add now adds\n", "and calc.mul multiplies\n"]
    out, took = _endless_reply(tmp_path, endless, every_s=0.3, seconds=19)
    assert out.payload["tests"]["status"] == "pass" and "return a * b" in (tmp_path / "calc.py").read_text()
    assert (tmp_path / "test_calc.py").read_text() == TESTS
    assert 3 <= took < 12
    assert [r["name"] for r in _audit(tmp_path, "repair_applied")] == ["keep_cut_reply"]
    assert _audit(tmp_path, "model_reply_cut")


def test_passing_tests_end_the_rounds_even_where_the_goals_examples_fail(tmp_path: Path) -> None:
    # the goal's examples guide the first prompt; the tests decide when the rounds end
    wrong = "stats.py\n```python\ndef mean(xs):\n    return sum(xs)\n```\n"
    ctx, model = _ctx(tmp_path, [RIGHT + "\n" + wrong, RIGHT])
    ctx.cmd.inputs["goal"] = "Fix calc.py, and create stats.py with mean(values): mean([1, 2]) == 1.5."
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 1 and len(model.requests) == 1
    assert "return sum(xs)\n" in (tmp_path / "stats.py").read_text()
    assert [r["name"] for r in _audit(tmp_path, "repair_applied")] == ["goal_examples"]  # run, shown, not judged


def test_a_reply_that_goes_on_to_give_the_tests_back_is_ended_there(tmp_path: Path) -> None:
    endless = [RIGHT, "\ntest_calc.py\n```python\n", "import unittest\n", "class T(unittest.TestCase):\n"]
    out, took = _endless_reply(tmp_path, endless, every_s=0.2, seconds=120)
    assert out.payload["tests"]["status"] == "pass" and "return a * b" in (tmp_path / "calc.py").read_text()
    assert (tmp_path / "test_calc.py").read_text() == TESTS and took < 5
    assert [r["name"] for r in _audit(tmp_path, "repair_applied")] == ["stop_at_test_file"]


def test_a_reply_that_begins_by_giving_the_tests_back_is_ended_there_and_told_why(tmp_path: Path) -> None:
    from fake_openai import FakeOpenAI, Stream

    from agent.models.openai_http import OpenAIChatModel

    endless = ["### test_calc.py\n```python\n", "import unittest\n", "class T(unittest.TestCase):\n"]
    fake = FakeOpenAI([Stream(endless, every_s=0.2, forever=True, repeat_from=1), Stream([RIGHT])])
    with fake.running():
        ctx, _ = _ctx(tmp_path, [], rounds=2)
        ctx.model = OpenAIChatModel(fake.base_url, "m", timeout_s=5, stall_s=5, audit=ctx.audit)
        ctx.deadline = time.time() + 120
        started = time.monotonic()
        out = builder.handle(ctx)
        took = time.monotonic() - started
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 2 and took < 10
    assert (tmp_path / "test_calc.py").read_text() == TESTS
    second = fake.requests[1]["body"]["messages"][-1]["content"]
    assert "it began to give back a file of the project's tests" in second
    assert [r["name"] for r in _audit(tmp_path, "repair_applied")][0] == "stop_at_test_file"


class _PrefillModel(FakeModel):
    """A server that continues a trailing assistant message (llama.cpp)."""

    def capabilities(self, request: object = None) -> Capabilities:
        return Capabilities(server="llama.cpp", prefill=True)


def _prefill_ctx(tmp_path: Path, replies: list, model_cls: type = _PrefillModel):  # type: ignore[no-untyped-def]
    ctx, _ = _ctx(tmp_path, [])
    ctx.model = model = model_cls(list(replies))
    return ctx, model


def test_after_a_reply_that_began_with_the_tests_the_next_is_begun_with_the_file_to_change(tmp_path: Path) -> None:
    body = RIGHT.split("```python\n", 1)[1]  # the model goes on after the path line and the fence
    ctx, model = _prefill_ctx(tmp_path, [ModelReply(text="", finish_reason="stop_string"), body])
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 2
    assert "return a * b" in (tmp_path / "calc.py").read_text() and (tmp_path / "test_calc.py").read_text() == TESTS
    assert model.requests[0].messages[-1]["role"] == "user"  # the first reply is the model's own
    assert model.requests[1].messages[-1] == {"role": "assistant", "content": "calc.py\n```\n"}
    fired = [r for r in _audit(tmp_path, "repair_applied") if r["name"] == "begin_with_file"]
    assert [r["path"] for r in fired] == ["calc.py"]


def test_a_fresh_attempt_is_begun_with_the_file_to_change(tmp_path: Path) -> None:
    # Asked round 1's prompt again at a higher temperature, a small model often names the file in an
    # empty block and stops; begun with the file, the reply is code.
    body = RIGHT.split("```python\n", 1)[1]
    ctx, model = _prefill_ctx(tmp_path, [HALF, HALF, body])
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 3
    assert model.requests[2].messages[-1] == {"role": "assistant", "content": "calc.py\n```\n"}
    assert "could not be used" not in model.requests[2].messages[-2]["content"]  # round 1's prompt
    fired = [a["name"] for a in _audit(tmp_path, "repair_applied")]
    assert fired[-2:] == ["fresh_attempt", "begin_with_file"]
    (tmp_path / "off").mkdir()
    ctx, model = _prefill_ctx(tmp_path / "off", [HALF, HALF, RIGHT])
    ctx.settings = dataclasses.replace(ctx.settings, disabled_repairs=frozenset({"begin_with_file"}))
    assert builder.handle(ctx).payload["tests"]["status"] == "pass"
    assert model.requests[2].messages[-1]["role"] == "user"


def test_a_begun_reply_that_comes_back_whole_is_not_begun_twice(tmp_path: Path) -> None:
    # llama.cpp's plain (unstreamed) reply holds the begun text too; a server that answers anew gives it itself.
    ctx, model = _prefill_ctx(tmp_path, [ModelReply(text="", finish_reason="stop_string"),
                                         "calc.py\n```\n" + RIGHT.split("```python\n", 1)[1]])
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 2
    assert (tmp_path / "calc.py").read_text().startswith("def add(a, b):")


def test_a_new_module_the_task_names_is_the_file_a_reply_is_begun_with(tmp_path: Path) -> None:
    ctx, model = _prefill_ctx(tmp_path, [ModelReply(text="", finish_reason="stop_string"),
                                         "def mean(xs):\n    return sum(xs) / len(xs)\n```\n"])
    ctx.cmd.inputs["goal"] = "Create a new module stats.py with mean(values): mean([1, 2]) == 1.5."
    ctx.settings = dataclasses.replace(ctx.settings, builder_rounds=2)
    builder.handle(ctx)
    assert model.requests[1].messages[-1] == {"role": "assistant", "content": "stats.py\n```\n"}
    assert (tmp_path / "stats.py").read_text() == "def mean(xs):\n    return sum(xs) / len(xs)\n"


def test_a_begun_file_whose_fence_the_model_opens_again_is_read_without_that_line(tmp_path: Path) -> None:
    # round 1 begins with the tests; round 2 is begun "calc.py\n```\n" and the model writes "```python" first
    again = "```python\n" + RIGHT.split("```python\n", 1)[1]
    ctx, model = _prefill_ctx(tmp_path, [ModelReply(text="", finish_reason="stop_string"), again])
    out = builder.handle(ctx)
    assert model.requests[1].messages[-1] == {"role": "assistant", "content": "calc.py\n```\n"}
    assert out.payload["tests"]["status"] == "pass" and "```" not in (tmp_path / "calc.py").read_text()


def test_a_reply_begun_for_the_model_is_not_begun_on_a_server_that_answers_anew(tmp_path: Path) -> None:
    ctx, model = _prefill_ctx(tmp_path, ["```\ncalc.py\n```", RIGHT], model_cls=FakeModel)
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and model.requests[1].messages[-1]["role"] == "user"
    (tmp_path / "off").mkdir()
    ctx, model = _prefill_ctx(tmp_path / "off", ["```\ncalc.py\n```", RIGHT])
    ctx.settings = dataclasses.replace(ctx.settings, disabled_repairs=frozenset({"begin_with_file"}))
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and model.requests[1].messages[-1]["role"] == "user"


def test_a_round_after_failing_tests_asks_for_the_cause_first_and_begins_the_reply_with_it(tmp_path: Path) -> None:
    # The model goes on after the begun words: the cause, then the file.
    ctx, model = _prefill_ctx(tmp_path, [HALF, " mul adds where it should multiply.\n\n" + RIGHT.split("\n\n", 1)[1]])
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 2
    assert "return a * b" in (tmp_path / "calc.py").read_text()
    first, second = (r.messages for r in model.requests)
    assert "First say" not in first[-1]["content"]  # round 1 is asked as the model alone is
    asked = second[-2]["content"]
    assert "FAIL: test_mul" in asked and "First say in one or two sentences what in your code makes these tests " \
        "fail" in asked and "Say nothing else" not in asked.split("## Your answer")[-1]
    assert second[-1] == {"role": "assistant", "content": "The tests fail because"}
    # One system message for every round: the server reuses the exchange's prompt the round continues.
    assert second[0] == first[0] and second[1:3] == [first[1], {"role": "assistant", "content": HALF}]
    fired = [r for r in _audit(tmp_path, "repair_applied") if r["name"] == "reason_before_fixing"]
    assert [(r["round"], r["begun"]) for r in fired] == [(2, True)]
    assert out.payload["summary"].startswith("The tests fail because mul adds")  # the reply's words, begun ones too


def test_a_reply_that_gives_the_cause_then_the_fixed_method_alone_is_merged_into_its_class(tmp_path: Path) -> None:
    ctx, model = _prefill_ctx(tmp_path, [
        "calc.py\n```python\nclass Calc:\n    def add(self, a, b):\n        return a + b\n\n"
        "    def mul(self, a, b):\n        return a + b\n```\n",
        " mul adds. Here is the fixed method:\n```python\n    def mul(self, a, b):\n        return a * b\n```\n"])
    (tmp_path / "calc.py").write_text("class Calc:\n    def add(self, a, b):\n        return 0\n\n"
                                      "    def mul(self, a, b):\n        return 0\n")
    (tmp_path / "test_calc.py").write_text(TESTS.replace("calc.add(", "calc.Calc().add(").replace("calc.mul(",
                                                                                                 "calc.Calc().mul("))
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 2
    assert (tmp_path / "calc.py").read_text() == ("class Calc:\n    def add(self, a, b):\n        return a + b\n\n"
                                                  "    def mul(self, a, b):\n        return a * b\n")


def test_once_a_reply_asked_for_the_cause_gave_no_file_the_command_asks_for_the_cause_no_more(
        tmp_path: Path) -> None:
    wrong = "calc.py\n```python\ndef add(a, b):\n    return 0\n\n\ndef mul(a, b):\n    return 1\n```\n"
    # round 1: both fail; 2: asked for the cause, words alone; 3: a fresh attempt, one passes; 4: the fix
    ctx, model = _prefill_ctx(tmp_path, [wrong, " mul and add are wrong.", HALF, RIGHT])
    ctx.settings = dataclasses.replace(ctx.settings, builder_rounds=4)
    out = builder.handle(ctx)
    assert [(r["outcome"], r.get("fresh", False)) for r in out.payload["round_log"]] == [
        ("kept", False), ("unusable", False), ("kept", True), ("kept", False)]
    assert out.payload["tests"]["status"] == "pass"
    second, fourth = model.requests[1].messages, model.requests[3].messages
    assert second[-1] == {"role": "assistant", "content": "The tests fail because"}
    assert fourth[-1]["role"] == "user" and "First say" not in fourth[-1]["content"]
    assert "FAIL: test_mul" in fourth[-1]["content"]  # still shown the failures, asked for the files
    fired = [r["round"] for r in _audit(tmp_path, "repair_applied") if r["name"] == "reason_before_fixing"]
    assert fired == [2]


def test_the_cause_first_is_asked_without_begun_words_where_the_server_answers_anew_and_not_when_off(
        tmp_path: Path) -> None:
    ctx, model = _prefill_ctx(tmp_path, [HALF, RIGHT], model_cls=FakeModel)
    assert builder.handle(ctx).payload["tests"]["status"] == "pass"
    assert model.requests[1].messages[-1]["role"] == "user" and "First say" in model.requests[1].messages[-1]["content"]
    (tmp_path / "off").mkdir()
    ctx, model = _prefill_ctx(tmp_path / "off", [HALF, RIGHT])
    ctx.settings = dataclasses.replace(ctx.settings, disabled_repairs=frozenset({"reason_before_fixing"}))
    assert builder.handle(ctx).payload["tests"]["status"] == "pass"
    said = model.requests[1].messages[-1]
    assert said["role"] == "user" and "First say" not in said["content"] and "Say nothing else" in said["content"]
    assert "reason_before_fixing" not in [a["name"] for a in _audit(tmp_path / "off", "repair_applied")]


def test_a_reply_with_no_code_is_not_carried_on_as_the_models_own_turn(tmp_path: Path) -> None:
    # An empty block (or a path put in one) as its own turn, a small model writes it again.
    ctx, model = _ctx(tmp_path, [HALF, "```\ncalc.py\n```", RIGHT], rounds=3)
    ctx.settings = dataclasses.replace(ctx.settings, disabled_repairs=frozenset({"fresh_attempt"}))
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 3
    assert [m["role"] for m in model.requests[1].messages[1:]] == ["user", "assistant", "user"]  # HALF goes on
    third = model.requests[2].messages
    assert len(third) == 2 and "it had no file in the form asked for" in third[-1]["content"]


def test_rounds_that_move_no_test_forward_go_on_while_rounds_are_left(tmp_path: Path) -> None:
    # Kept (one test passes), then a broken module (rolled back), a reply without a file, the
    # half-right file given back: three rounds that moved nothing; the fifth, a fresh attempt, passes.
    replies = [HALF, BROKEN, "I cannot.", HALF, RIGHT, RIGHT]
    ctx, model = _ctx(tmp_path, replies, rounds=6)
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 5 and len(model.requests) == 5
    assert [r["outcome"] for r in out.payload["round_log"]] == ["kept", "rolled back", "unusable", "unusable", "kept"]
    assert "return a * b" in (tmp_path / "calc.py").read_text()


GREEN = "def add(a, b):\n    return a + b\n"
GREEN_TESTS = ("import unittest\n\nimport calc\n\n\nclass T(unittest.TestCase):\n"
               "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n")
SUB_TESTS = ("import unittest\n\nimport calc\n\n\nclass S(unittest.TestCase):\n"
             "    def test_sub(self):\n        self.assertEqual(calc.sub(5, 3), 2)\n")


def _green_ctx(tmp_path: Path, replies: list[str], rounds: int = 3,  # type: ignore[no-untyped-def]
               off: frozenset[str] = frozenset()):
    """A project whose tests pass before the change: none of them checks the task. `off`: strategies."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "calc.py").write_text(GREEN)
    (tmp_path / "test_calc.py").write_text(GREEN_TESTS)
    settings = RoleSettings(test_command=f"{sys.executable} -m unittest discover -q -s . -p 'test_*.py'",
                            builder_rounds=rounds, answers="text", disabled_repairs=off)
    model = FakeModel(list(replies))
    return make_context(tmp_path, "implement", model, settings=settings,
                        inputs={"goal": "Add sub(a, b) to calc.py: it returns a minus b."}), model


def _calc(body: str) -> str:
    return f"calc.py\n```python\n{GREEN}\n\ndef sub(a, b):\n    return {body}\n```\n"


def test_a_test_the_builder_wrote_that_still_fails_is_taken_out_and_the_code_stays(tmp_path: Path) -> None:
    wrong_test = "\ntest_sub.py\n```python\n" + SUB_TESTS.replace("2)", "3)") + "```\n"  # 5 - 3 is not 3
    ctx, _ = _green_ctx(tmp_path, [_calc("a - b") + wrong_test], rounds=1, off=frozenset({"write_goal_tests"}))
    out = builder.handle(ctx)
    assert not (tmp_path / "test_sub.py").exists() and "return a - b" in (tmp_path / "calc.py").read_text()
    assert out.payload["tests"]["status"] == "pass" and out.payload["tests"]["passed"] == 1
    assert out.payload["files"] == ["calc.py"] and "changes_reverted" not in out.payload
    assert out.payload["tests_taken_out"]["files"] == ["test_sub.py"]
    assert "AssertionError" in out.payload["tests_taken_out"]["output_tail"]
    assert "take_out_own_tests" in [a["name"] for a in _audit(tmp_path, "repair_applied")]


def test_without_take_out_own_tests_the_whole_change_goes_with_the_wrong_test(tmp_path: Path) -> None:
    wrong_test = "\ntest_sub.py\n```python\n" + SUB_TESTS.replace("2)", "3)") + "```\n"
    ctx, _ = _green_ctx(tmp_path, [_calc("a - b") + wrong_test], rounds=1,
                        off=frozenset({"write_goal_tests", "take_out_own_tests"}))
    out = builder.handle(ctx)
    assert "tests_taken_out" not in out.payload and out.payload["changes_reverted"]
    assert not (tmp_path / "test_sub.py").exists() and "def sub" not in (tmp_path / "calc.py").read_text()
    assert "take_out_own_tests" not in [a["name"] for a in _audit(tmp_path, "repair_applied")]


def test_implement_changes_given_the_code_back_twice_with_passing_tests_stops_and_keeps_it(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [RIGHT, RIGHT, RIGHT, RIGHT], rounds=6)
    (tmp_path / "calc.py").write_text(RIGHT.split("```python\n")[1].split("```")[0])  # already right
    ctx.cmd = dataclasses.replace(ctx.cmd, action="implement_changes")
    out = builder.handle(ctx)
    assert len(model.requests) == 2  # not six rounds of the same reply
    assert out.event == "builder.completed" and out.payload["files"] == [] and out.payload["tests"]["status"] == "pass"
    assert [a["name"] for a in _audit(tmp_path, "repair_applied")] == ["feedback_in_conversation",
                                                                      "stop_when_nothing_to_change",
                                                                      "keep_passing_code"]


def test_without_keep_passing_code_an_implement_changes_with_no_change_fails(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [RIGHT, RIGHT, RIGHT, RIGHT], rounds=6)
    (tmp_path / "calc.py").write_text(RIGHT.split("```python\n")[1].split("```")[0])  # already right
    ctx.cmd = dataclasses.replace(ctx.cmd, action="implement_changes")
    ctx.settings.disabled_repairs = frozenset({"keep_passing_code"})
    with pytest.raises(InvalidModelResponse):
        builder.handle(ctx)
    assert "keep_passing_code" not in [a["name"] for a in _audit(tmp_path, "repair_applied")]


def test_implement_changes_given_the_code_back_with_failing_tests_goes_on(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [HALF, HALF, HALF, RIGHT], rounds=6)
    (tmp_path / "calc.py").write_text(HALF.split("```python\n")[1].split("```")[0])  # one test fails
    ctx.cmd = dataclasses.replace(ctx.cmd, action="implement_changes")
    out = builder.handle(ctx)
    assert len(model.requests) == 4 and out.payload["tests"]["status"] == "pass"
    assert "stop_when_nothing_to_change" not in [a["name"] for a in _audit(tmp_path, "repair_applied")]


def test_a_failing_test_is_quoted_up_to_its_failing_line(tmp_path: Path) -> None:
    # unittest prints the failing line alone: `self.assertEqual(calc.mul(a, b), expected)` names no value
    ctx, model = _ctx(tmp_path, [HALF, RIGHT])
    (tmp_path / "test_calc.py").write_text(TESTS.replace(
        "    def test_mul(self):\n        self.assertEqual(calc.mul(2, 3), 6)\n",
        "    def test_mul(self):\n        a, b = 2, 3\n        expected = 6\n        self.assertEqual(calc.mul(a, b), expected)\n"))
    assert builder.handle(ctx).payload["tests"]["status"] == "pass"
    said = model.requests[1].messages[-1]["content"]
    assert ("The failing tests' code, up to the line that failed:\ntest_calc.py lines 10–13:\n```\n"
            "    def test_mul(self):\n        a, b = 2, 3\n        expected = 6\n"
            "        self.assertEqual(calc.mul(a, b), expected)\n```\n") in said
    assert [a["name"] for a in _audit(tmp_path, "repair_applied")] == [
        "quote_failing_tests", "feedback_in_conversation", "reason_before_fixing"]


def test_quoting_the_failing_tests_can_be_switched_off(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [HALF, RIGHT])
    (tmp_path / "test_calc.py").write_text(TESTS.replace("        self.assertEqual(calc.mul(2, 3), 6)\n",
                                                         "        expected = 6\n        self.assertEqual(calc.mul(2, 3), expected)\n"))
    ctx.settings = dataclasses.replace(ctx.settings, disabled_repairs=frozenset({"quote_failing_tests"}))
    assert builder.handle(ctx).payload["tests"]["status"] == "pass"
    said = model.requests[1].messages[-1]["content"]
    assert "FAIL: test_mul" in said and "failing tests' code" not in said and "expected = 6" not in said


def test_where_the_tests_pass_before_the_change_a_test_of_the_task_is_written_first(tmp_path: Path) -> None:
    own = "test_task_t_0001.py\n```python\n" + SUB_TESTS + "```\n"
    ctx, model = _green_ctx(tmp_path, [own, _calc("a + b"), _calc("a * b"), _calc("a - b")], rounds=3)
    out = builder.handle(ctx)
    first = model.requests[0].messages[-1]["content"]
    assert "Write only a new test file, test_task_t_0001.py" in first and "do not write it" in first
    # the test caught the wrong code; a fresh attempt (from the code as it was, the test kept) fixed it
    assert out.payload["rounds"] == 3 and out.payload["tests"]["status"] == "pass"
    assert out.payload["tests"]["passed"] == 2 and (tmp_path / "test_task_t_0001.py").read_text() == SUB_TESTS
    assert sorted(out.payload["files"]) == ["calc.py", "test_task_t_0001.py"]
    fresh = model.requests[3].messages[-1]["content"]
    assert "## The project's tests" in fresh and "def test_sub" in fresh.split("## Files to change")[0]
    fired = [r for r in _audit(tmp_path, "repair_applied") if r["name"] in ("write_goal_tests", "fresh_attempt")]
    assert [(r["name"], r.get("written")) for r in fired] == [("write_goal_tests", True), ("fresh_attempt", None)]


def test_a_test_of_the_task_given_in_a_lone_block_without_its_path_is_taken_as_the_one_asked_for(
        tmp_path: Path) -> None:
    ctx, model = _green_ctx(tmp_path, ["```python\n" + SUB_TESTS + "```\n", _calc("a + b"), _calc("a - b")])
    out = builder.handle(ctx)
    assert (tmp_path / "test_task_t_0001.py").read_text() == SUB_TESTS
    assert out.payload["rounds"] == 2 and out.payload["tests"]["passed"] == 2


def test_a_test_of_the_task_that_stays_wrong_is_taken_out_and_the_code_kept(tmp_path: Path) -> None:
    wrong = "test_task_t_0001.py\n```python\n" + SUB_TESTS.replace("2)", "3)") + "```\n"  # 5 - 3 is not 3
    ctx, _ = _green_ctx(tmp_path, [wrong, _calc("a - b")], rounds=1)
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["tests_taken_out"]["files"] == ["test_task_t_0001.py"]
    assert not (tmp_path / "test_task_t_0001.py").exists() and "return a - b" in (tmp_path / "calc.py").read_text()


def test_no_test_of_the_task_is_asked_for_where_the_tests_fail_or_the_strategy_is_off(tmp_path: Path) -> None:
    ctx, model = _ctx(tmp_path, [RIGHT])
    builder.handle(ctx)
    assert len(model.requests) == 1 and "Write only a new test file" not in model.requests[0].messages[-1]["content"]
    off, off_model = _green_ctx(tmp_path / "off", [_calc("a - b")], off=frozenset({"write_goal_tests"}))
    out = builder.handle(off)
    assert len(off_model.requests) == 1 and out.payload["files"] == ["calc.py"]


def test_files_asked_for_as_lua_long_strings_go_through_the_same_rounds(tmp_path: Path) -> None:
    half = 'tools.write("calc.py", [==[\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n]==])\n'
    right = half.replace("return a + b\n]==]", "return a * b\n]==]")
    ctx, model = _ctx(tmp_path, [half, right])
    ctx.settings = dataclasses.replace(ctx.settings, answers="lua")
    out = builder.handle(ctx)
    assert out.payload["tests"]["status"] == "pass" and out.payload["rounds"] == 2
    assert out.payload["answer_form"] == "lua"
    assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
    system = model.requests[0].messages[0]["content"]
    assert 'tools.write("calc.py", [==[' in system and "fenced code block" not in system
    assert model.requests[1].messages[2] == {"role": "assistant", "content": half}  # its own turn, as in fenced text
    # a project test begun as a write is stopped there, as a fenced one is
    assert 'tools.write("test_calc.py"' in model.requests[0].stop


def test_a_file_given_in_part_is_merged_into_its_file_and_off_by_name_is_written_as_given(tmp_path: Path) -> None:
    part = "calc.py\n```python\ndef mul(a, b):\n    return a * b\n```\n"  # add left out
    for name, off in (("on", frozenset[str]()), ("off", frozenset({"merge_partial_file"}))):
        (tmp_path / name).mkdir()
        ctx, _ = _ctx(tmp_path / name, [part], rounds=1)
        ctx.settings.disabled_repairs = off
        builder.handle(ctx)
        text = (tmp_path / name / "calc.py").read_text()
        assert "return a * b" in text and ("def add" in text) is (name == "on")
        assert ("merge_partial_file" in [a["name"] for a in _audit(tmp_path / name, "repair_applied")]) is (name == "on")


def test_a_block_without_a_path_goes_to_the_file_with_its_definitions_and_off_by_name_is_not_read(
        tmp_path: Path) -> None:
    pathless = "Fixed.\n```python\ndef mul(a, b):\n    return a * b\n```\n"
    for name, off in (("on", frozenset[str]()), ("off", frozenset({"place_block_by_definitions"}))):
        (tmp_path / name).mkdir()
        ctx, _ = _ctx(tmp_path / name, [pathless], rounds=1)
        ctx.settings.disabled_repairs = off
        try:
            builder.handle(ctx)
        except InvalidModelResponse:
            assert name == "off"  # no file in the reply: no round made a change
        text = (tmp_path / name / "calc.py").read_text()
        assert ("return a * b" in text) is (name == "on") and "def add" in text
        placed = "place_block_by_definitions" in [a["name"] for a in _audit(tmp_path / name, "repair_applied")]
        assert placed is (name == "on")
