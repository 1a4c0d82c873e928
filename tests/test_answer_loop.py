"""The answer loop: repairs that never resend an identical request, and say precisely what to fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from role_context import Caps, FakeModel, FakeModelWithCaps, Recorded, make_context

from agent.answering.loop import AnswerSpec, obtain_answer
from agent.command_context import RoleSettings
from agent.errors import AgentError, InvalidModelResponse, ModelTimeout
from agent.models.base import ModelReply

APPROVED = json.dumps({"status": "approved", "summary": "fine", "findings": []})
BAD = json.dumps({"status": "maybe", "summary": "?", "findings": []})
REVIEW = AnswerSpec("reviewer", "review")


def _signature(request) -> tuple[str, int | None, bool]:  # type: ignore[no-untyped-def]
    return request.digest(), request.max_tokens, request.response_schema is not None


def test_a_timeout_asks_the_same_question_again_in_the_same_form(tmp_path: Path) -> None:
    model = FakeModel([ModelTimeout("read timeout"), APPROVED])
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers="plan", max_tokens=4096))
    answer = obtain_answer(ctx, REVIEW, "review it")
    assert answer.data["status"] == "approved" and answer.form == "plan"
    first, second = model.requests
    assert second.max_tokens == 4096 and second.messages == first.messages and second.response_schema is None
    assert '"answer_timeout"' in (tmp_path / "logs/luallm-agent/audit.jsonl").read_text()


def test_timeouts_past_the_repair_budget_fail_with_the_timeout(tmp_path: Path) -> None:
    model = FakeModel([ModelTimeout("t")] * 3)
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers="json"))
    with pytest.raises(ModelTimeout):
        obtain_answer(ctx, REVIEW, "review it")
    assert len(model.requests) == 3


def test_a_cut_off_answer_is_told_so(tmp_path: Path) -> None:
    cut = ModelReply(text='{"status": "approved", "summary": "the code looks')
    cut.finish_reason = "length"  # type: ignore[attr-defined]  # set by the streaming model layer
    model = FakeModel([cut, APPROVED])
    obtain_answer(make_context(tmp_path, "review", model), REVIEW, "review it")
    assert "cut off at the token limit" in model.requests[1].messages[-1]["content"]


@pytest.mark.parametrize("form", ["json", "plan"])
def test_the_same_invalid_answer_twice_ends_the_asking(tmp_path: Path, form: str) -> None:
    model = FakeModel([BAD, BAD, APPROVED])
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers=form))
    with pytest.raises(InvalidModelResponse):
        obtain_answer(ctx, REVIEW, "review it")
    assert len(model.requests) == 2  # no third identical question
    assert all(r.response_schema is None for r in model.requests) is (form == "plan")


def test_a_failed_plan_reports_what_it_wrote(tmp_path: Path) -> None:
    failing = "```lua\nfunction run(context)\n  tools.write('src/a.py', 'x = 1\\n')\n  error('boom')\nend\n```"
    done = json.dumps({"summary": "a.py is written", "no_changes_reason": "the plan already wrote it"})
    model = FakeModel([failing, done])
    rec = Recorded()
    ctx = make_context(tmp_path, "implement", model, record=rec)
    obtain_answer(ctx, AnswerSpec("builder", "planning"), "build it")
    repair = model.requests[1].messages[-1]["content"]
    assert "plan_runtime_error" in repair and "your plan wrote: src/a.py" in repair
    assert [a.path for a in ctx.artifacts] == ["src/a.py"]
    assert ("artifact.produced", {"path": "src/a.py", "sha256": ctx.artifacts[0].sha256, "size": 6}) in rec.events


def test_a_disallowed_test_run_and_an_indexed_error_get_named(tmp_path: Path) -> None:
    plan = ("```lua\nfunction run(context)\n  local r = tools.run('pytest -q')\n"
            "  return {summary = r.stdout:sub(1, 10)}\nend\n```")
    model = FakeModel([plan, json.dumps({"summary": "ok", "no_changes_reason": "x"})])
    obtain_answer(make_context(tmp_path, "implement", model), AnswerSpec("builder", "planning"), "build it")
    repair = model.requests[1].messages[-1]["content"]
    assert "tools.run({\"cmd\":\"pytest -q\"}) → command rejected: 'pytest' is not an allowed command" in repair


def test_a_plans_lua_error_goes_back_as_it_is_and_costs_an_attempt(tmp_path: Path) -> None:
    plan = "```lua\nfunction run(context)\n  local files = [1, 2]\n  return {summary = 'x'}\nend\n```"
    model = FakeModel([plan, json.dumps({"summary": "ok", "no_changes_reason": "x"})])
    answer = obtain_answer(make_context(tmp_path, "implement", model), AnswerSpec("builder", "planning"), "build it")
    assert answer.attempts == 2
    repair = model.requests[1].messages[-1]["content"]
    assert repair.startswith("Your answer was rejected (plan_invalid): ") and "Hint:" not in repair


def test_the_chosen_form_is_audited(tmp_path: Path) -> None:
    obtain_answer(make_context(tmp_path, "review", FakeModel([APPROVED])), REVIEW, "review it")
    audit = (tmp_path / "logs/luallm-agent/audit.jsonl").read_text()
    line = next(json.loads(x) for x in audit.splitlines() if '"answer_form"' in x)
    assert line["form"] == "json" and line["schema"] is True and "unknown" in line["reason"]


def test_a_short_reasoning_first_is_accepted_and_a_long_one_repaired(tmp_path: Path) -> None:
    think = json.dumps({"reasoning": "looks right", "status": "approved", "summary": "fine", "findings": []})
    ramble = json.dumps({"reasoning": "x" * 601, "status": "approved", "summary": "fine", "findings": []})
    assert obtain_answer(make_context(tmp_path, "review", FakeModel([think])), REVIEW, "r").data["status"] == "approved"
    model = FakeModel([ramble, think])
    obtain_answer(make_context(tmp_path, "review", model), REVIEW, "r")
    assert "at $.reasoning" in model.requests[1].messages[-1]["content"]


def test_a_cut_off_answer_that_repeats_itself_gets_a_lower_max_tokens(tmp_path: Path) -> None:
    from agent.answering.sameness import looping

    # SmolLM2-135M under real lorch: 8,200 characters of one line over and over, cut off at 3,072 tokens
    ramble = ModelReply(text='{"summary": "x", "files": [{"path": "a.py", "content": "' + "print(1)\\n" * 900)
    ramble.finish_reason = "length"  # type: ignore[attr-defined]
    model = FakeModel([ramble, APPROVED])
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers="json", max_tokens=None))
    obtain_answer(ctx, REVIEW, "review it")
    assert [r.max_tokens for r in model.requests] == [None, 512]  # the reviewer's default 1024, halved
    assert "repeated itself until it was cut off" in model.requests[1].messages[-1]["content"]
    assert looping(ramble.text) and not looping(Path(__file__).read_text()[:8000])


def test_an_answer_that_looped_is_not_shown_back_but_the_question_asked_afresh(tmp_path: Path) -> None:
    # The 1.5B's spec answer: a Changelog of the same three lines until cut off; shown that answer
    # at temperature 0, it wrote it again, to the same place.
    ramble = ModelReply(text='{"status": "updated", "summary": "x", "section_edits": [{"section": "Changelog", '
                             '"content": "' + "- Added the `insert` method.\\n" * 120)
    ramble.finish_reason = "repetition"  # type: ignore[attr-defined]
    model = FakeModel([ramble, APPROVED])
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers="json"))
    assert obtain_answer(ctx, REVIEW, "review it").data["status"] == "approved"
    second = model.requests[1].messages
    assert [m["role"] for m in second] == ["system", "user"]
    assert "Added the `insert` method" not in json.dumps(second)
    assert second[1]["content"].startswith("review it") and "repeated itself until it was cut off" in second[1]["content"]
    audit = (tmp_path / "logs/luallm-agent/audit.jsonl").read_text()
    assert '"name":"restart_after_loop"' in audit


def test_with_restart_after_loop_off_the_looped_answer_is_shown_back(tmp_path: Path) -> None:
    ramble = ModelReply(text='{"summary": "' + "- Added the `insert` method.\\n" * 120)
    ramble.finish_reason = "repetition"  # type: ignore[attr-defined]
    model = FakeModel([ramble, APPROVED])
    ctx = make_context(tmp_path, "review", model,
                       settings=RoleSettings(answers="json", disabled_repairs=frozenset({"restart_after_loop"})))
    obtain_answer(ctx, REVIEW, "review it")
    assert [m["role"] for m in model.requests[1].messages][-2:] == ["assistant", "user"]
    assert "Added the `insert` method" in model.requests[1].messages[-2]["content"]


def test_a_long_cut_off_answer_that_does_not_repeat_keeps_its_max_tokens(tmp_path: Path) -> None:
    text = Path(__file__).read_text()[:6000]  # real code: cut off, but not a loop
    cut = ModelReply(text='{"summary": ' + json.dumps(text))
    cut.finish_reason = "length"  # type: ignore[attr-defined]
    model = FakeModel([cut, APPROVED])
    obtain_answer(make_context(tmp_path, "review", model, settings=RoleSettings(answers="json", max_tokens=2000)),
                  REVIEW, "review it")
    assert [r.max_tokens for r in model.requests] == [2000, 2000]


def test_a_plan_that_loops_until_cut_off_is_asked_afresh_as_a_plan_with_fewer_tokens(tmp_path: Path) -> None:
    # Qwen2.5-Coder-0.5B asked for a plan: a long string of the same lines, cut off each time
    loop = ModelReply(text="```lua\nfunction run(context)\n  tools.write('a.py', [[\n" + "x = 1\n" * 900)
    loop.finish_reason = "length"  # type: ignore[attr-defined]
    model = FakeModel([loop, APPROVED])
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers="plan", max_tokens=None))
    assert obtain_answer(ctx, REVIEW, "review it").data["status"] == "approved"
    first, second = model.requests
    assert first.response_schema is None and second.response_schema is None
    assert first.max_tokens is None and second.max_tokens == 512  # the reviewer's default 1024, halved
    assert [m["role"] for m in second.messages] == ["system", "user"]  # its loop not shown back
    assert "repeated itself until it was cut off" in second.messages[-1]["content"]
    assert "JSON object only" not in second.messages[-1]["content"]
    assert not (tmp_path / "a.py").exists()


def _looped_plan() -> ModelReply:
    """A grammar-held plan whose test file repeats two lines until the client stopped the stream."""
    looped = ModelReply(text="```lua\nfunction run(context)\n  local w = tools.write('t.py', [[\n"
                        + "    assert f(1) == 1\n    assert f(2) == 4\n" * 40)
    looped.finish_reason = "repetition"  # type: ignore[attr-defined]
    return looped


def test_a_grammar_held_plan_that_loops_costs_an_attempt_each_time_until_the_budget(tmp_path: Path) -> None:
    # Qwen2.5-Coder-0.5B held to the grammar (feature-cart, run gram10): every plan looped. Each
    # looped plan is an invalid answer like any other: it costs an attempt, the next is asked with
    # fewer tokens and the same grammar, and the command ends at the budget with the plan's error.
    model = FakeModelWithCaps([_looped_plan()] * 4, caps=Caps(grammar=True))
    ctx = make_context(tmp_path, "implement", model, settings=RoleSettings(answers="grammar", max_tokens=None))
    with pytest.raises(AgentError) as err:
        obtain_answer(ctx, AnswerSpec("builder", "planning"), "write t.py")
    assert err.value.code == "plan_invalid" and len(model.requests) == 3
    first, second, third = model.requests
    assert first.grammar and second.grammar == first.grammar and third.grammar == first.grammar
    assert second.max_tokens is not None and third.max_tokens == max(256, second.max_tokens // 2)
    assert not (tmp_path / "t.py").exists()
    audit = [json.loads(x) for x in (tmp_path / "logs/luallm-agent/audit.jsonl").read_text().splitlines()]
    assert [a["attempt"] for a in audit if a["event"] == "answer_looping"] == [1, 2]


def test_a_plan_cut_off_at_every_attempt_fails_at_the_budget_with_its_error(tmp_path: Path) -> None:
    # Qwen2.5-Coder-0.5B's spec plan (run gram12): the same checks nested deeper each time, cut at the
    # token limit in all three attempts. Each is told it was cut off; the third ends the command.
    def nested(depth: int) -> str:
        return "".join("  " * (i + 1) + f"if #errors == {i} then -- check {i}\n" for i in range(depth))

    cuts = []
    for depth in (30, 31, 32):
        cut = ModelReply(text="```lua\nfunction run(context)\n  local errors = {}\n" + nested(depth))
        cut.finish_reason = "length"  # type: ignore[attr-defined]
        cuts.append(cut)
    model = FakeModel([*cuts, APPROVED])
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers="plan", max_tokens=None))
    with pytest.raises(AgentError) as err:
        obtain_answer(ctx, REVIEW, "review it")
    assert err.value.code == "plan_invalid" and len(model.requests) == 3
    assert all(r.response_schema is None for r in model.requests)
    assert all("cut off at the token limit" in r.messages[-1]["content"] for r in model.requests[1:])


def test_a_plan_that_fails_the_same_way_twice_is_asked_again_more_widely(tmp_path: Path) -> None:
    # Qwen2.5-Coder-0.5B's spec plan (run gram14): arithmetic on a table, the same runtime error three
    # times. The second time the next request samples at a higher temperature, in the same form.
    def plan(i: int) -> str:
        return (f"```lua\nfunction run(context)\n  local expected = {{}}\n  local n = expected + {i}\n"
                "  return {status = 'approved', summary = 'x', findings = {}}\nend\n```")

    model = FakeModel([plan(1), plan(2), APPROVED])
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers="plan", max_tokens=None))
    answer = obtain_answer(ctx, REVIEW, "review it")
    assert answer.data["status"] == "approved" and answer.attempts == 3
    assert [r.response_schema is not None for r in model.requests] == [False, False, False]
    assert [r.temperature for r in model.requests] == [0.2, 0.2, 0.8]
    assert "plan_runtime_error" in model.requests[2].messages[-1]["content"]


def test_the_same_failure_at_the_end_of_the_budget_ends_the_asking(tmp_path: Path) -> None:
    # Qwen2.5-Coder-1.5B's spec plan (run gram8): an unknown global, then indexing `context.files`
    # (nil) in attempts 2 and 3: the command fails with the plan's error, in either form no attempt more.
    def plan(body: str) -> str:
        return (f"```lua\nfunction run(context)\n  {body}\n"
                "  return {status = 'approved', summary = 'x', findings = {}}\nend\n```")

    unknown, nil_index = plan("local f = files_list .. 'x'"), plan("local n = context.files[1]")
    model = FakeModel([unknown, nil_index, nil_index.replace("[1]", "[2]"), APPROVED])
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers="plan", max_tokens=None))
    with pytest.raises(AgentError) as err:
        obtain_answer(ctx, REVIEW, "review it")
    assert err.value.code == "plan_runtime_error" and len(model.requests) == 3
    assert all(r.response_schema is None for r in model.requests)

    model = FakeModel([BAD, BAD.replace("?", "??"), BAD.replace("?", "???"), APPROVED])
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers="json", max_tokens=None))
    with pytest.raises(InvalidModelResponse):
        obtain_answer(ctx, REVIEW, "review it")
    assert len(model.requests) == 3


def test_an_unknown_global_in_a_grammar_held_plan_goes_back_under_the_same_grammar(tmp_path: Path) -> None:
    # Qwen2.5-Coder-0.5B's spec plan (run gram16): `{ temperature.py }`. The lint's error goes back
    # as it is; the grammar is the role's own, unchanged.
    def plan(files: str) -> str:
        return (f"```lua\nfunction run(context)\n  local files = {{ {files} }}\n"
                "  return {status = 'approved', summary = 'fine', findings = {}}\nend\n```")

    model = FakeModelWithCaps([plan("temperature.py"), plan('"temperature.py"')], caps=Caps(grammar=True))
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers="grammar", max_tokens=None))
    answer = obtain_answer(ctx, REVIEW, "review it")
    assert answer.data["status"] == "approved" and answer.form == "grammar" and answer.attempts == 2
    first, second = model.requests
    assert first.grammar and second.grammar == first.grammar
    repair = second.messages[-1]["content"]
    assert "plan_invalid" in repair and "unknown global 'temperature'" in repair and "Hint:" not in repair


def test_a_plan_that_ran_and_then_looped_in_prose_is_repaired_as_a_plan(tmp_path: Path) -> None:
    # The 0.5B (run gram17, feature-cart): its plan ran (an edit whose old text is not in the file),
    # then its reply looped in prose past the plan's end. Asked for JSON, it looped there too; the
    # plan's own error is what to repair, in the plan's form, with fewer tokens.
    (tmp_path / "cart.py").write_text("class Cart:\n    pass\n")
    ran = ModelReply(text="```lua\nfunction run(context)\n  local r = tools.edit('cart.py', 'def add(name):', 'x')\n"
                     "  if type(r) == 'table' and r.error then error('edit failed: ' .. r.error) end\n"
                     "  return {summary = 'edited'}\nend\n```\n\n" + "The plan edits the cart and runs the tests. " * 30)
    ran.finish_reason = "repetition"  # type: ignore[attr-defined]
    fixed = ("```lua\nfunction run(context)\n  tools.edit('cart.py', '    pass\\n', '    items = {}\\n')\n"
             "  return {summary = 'edited'}\nend\n```")
    model = FakeModel([ran, fixed])
    ctx = make_context(tmp_path, "implement", model, settings=RoleSettings(answers="plan", max_tokens=None))
    answer = obtain_answer(ctx, AnswerSpec("builder", "planning"), "add items")
    assert answer.via == "lua" and answer.form == "plan"
    second = model.requests[1]
    assert second.response_schema is None and second.max_tokens is not None
    assert "the old text is not in cart.py" in second.messages[-1]["content"]
    assert "JSON object only" not in second.messages[-1]["content"]
    assert (tmp_path / "cart.py").read_text() == "class Cart:\n    items = {}\n"


def test_the_same_failure_at_another_line_is_the_same_error(tmp_path: Path) -> None:
    # The 0.5B (run gram18, feature-cart): an edit of absent text failed at line 12, then at line
    # 10: the same failure, so the third attempt samples more widely.
    def plan(pad: int) -> str:
        return ("```lua\nfunction run(context)\n" + "  local note = 'x'\n" * pad + "  local n = {} + 1\n"
                "  return {status = 'approved', summary = 'x', findings = {}}\nend\n```")

    model = FakeModel([plan(3), plan(1), APPROVED])
    ctx = make_context(tmp_path, "review", model, settings=RoleSettings(answers="plan", max_tokens=None))
    assert obtain_answer(ctx, REVIEW, "review it").data["status"] == "approved"
    audit = [json.loads(x) for x in (tmp_path / "logs/luallm-agent/audit.jsonl").read_text().splitlines()]
    errors = [a["error"] for a in audit if a["event"] == "answer_rejected"]
    assert "(line 5)" in errors[0] and "(line 3)" in errors[1]
    assert [a["reason"] for a in audit if a["event"] == "answer_temperature"] == ["the same error"]
    assert [r.temperature for r in model.requests] == [0.2, 0.2, 0.8]
