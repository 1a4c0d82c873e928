"""The builder as a developer works: write the files, run the tests, read the failures, write again.

Each round asks for the changed files whole, as text (`agent.answering.fenced_files`), writes them,
and runs the test command in the OS boundary. The next round shows the code as it now is and the
failing output. A round that leaves the tests worse than the best state so far (fewer passing, or
a module that no longer imports) is rolled back, so the command ends on its best state: all pass >
more passing > the code as it was. A reply the agent cannot use costs one round, never the command;
the command fails only when no round produced a usable change. Evidence is the tests, nothing read
out of the goal's prose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.answering.answer_form import builder_text_form
from agent.answering.answer_spec import strings_in
from agent.answering.file_forms import REASON_START, FileForm, file_form
from agent.answering.strategies import applied, enabled
from agent.command_context import CommandContext
from agent.edits.changes import FileWrite, is_test_path, named_definitions, planned_writes, unchanged_code
from agent.errors import AgentError, InvalidModelResponse, ShuttingDown
from agent.models.base import ModelRequest, capabilities_of
from agent.project_files import project_files
from agent.prompt import PromptBuilder
from agent.roles.failing_tests import Reader, failing_test_code
from agent.roles.prompting import read_project_text
from agent.roles.round_files import RoundFiles
from agent.roles.test_first import test_of_the_task
from agent.roles.test_ledger import TestLedger
from agent.roles.testrun import quoted_output, test_workspace

__all__ = ["RoundsResult", "build_in_rounds", "system_message"]

_TAIL = 2000
_TEST_CODE = 1200  # characters of the failing tests' own code, under their output
_TEST_CODE_HEAD = "The failing tests' code, up to the line that failed:"
_ECHOED = "it left every file exactly as it was"
_TESTS_FIRST = ("it began to give back a file of the project's tests, which must stay as they are, with no file of "
                "code before it: give only the files of code you change")
_RESERVE_S = 15.0  # kept after a cut reply: writing its files, one test run and the answer to lorch
_CONVERSATION_GROWTH = 1.5  # at most this many times the prompt that shows the files as they now are
_MIN_SECONDS = 20.0  # below this a round cannot finish: a small local model writes a file in tens of seconds


def system_message(form: FileForm) -> str:
    """The same for every round, a reply asked for the failures' cause too (its user turn says so): the
    server then reuses the prompt of the exchange a round continues, where a changed first message makes
    it read the whole prompt again (on one CPU thread, minutes a round)."""
    return ("You are an expert software developer. You change a project's code so that its task is done and its "
            "tests pass. " + form.rules + (f"\n{form.example}" if form.example else ""))


def _form(ctx: CommandContext) -> FileForm:
    return file_form(builder_text_form(ctx.settings.answers, ctx.model))


@dataclass
class RoundsResult:
    tests: dict[str, Any]
    rounds: int
    summary: str
    log: list[dict[str, Any]] = field(default_factory=list)
    changed: bool = False  # whether the files now differ from the code as it was
    withdrawn: bool = False  # the tests did better on the code as it was, so it was put back
    tests_taken_out: dict[str, Any] | None = None  # tests it wrote that still failed: {files, output_tail}
    form: str = "fenced"  # the text form the files were asked for in (file_forms.py)


def rank(tests: dict[str, Any]) -> tuple[int, int, int]:
    """Higher is better: all pass, then more tests passing, then fewer failing."""
    if tests.get("status") == "pass":
        return (2, 0, 0)
    return (1 if "passed" in tests else 0, int(tests.get("passed") or 0), -int(tests.get("failed") or 0))


def _no_change(ctx: CommandContext, paths: list[str]) -> tuple[str, bool]:
    """Why a reply that changes nothing is no answer, and whether the function the task names is to be
    asked for alone. (Not one the failing tests' errors are raised in: asked for that alone, a small
    model gives it back unchanged, so the round after such a reply is a fresh attempt.)"""
    why = "it leaves the code doing exactly what it did, so the task is not done: change the code the task is about"
    named = named_definitions(ctx.workspace, paths, " ".join(strings_in(ctx.cmd.inputs))) \
        if enabled(ctx, "ask_definition_alone") else []
    if not named:
        return why, False
    applied(ctx, "ask_definition_alone", shown=len(named))
    shown = "".join(f"\n{d}" for d in named)
    return (why + f". The task names this code, as it is now:{shown}\nWork out step by step what it returns for "
            "the values in the task; where that differs from what the task says, change it"), True


def _cut_off(form: FileForm, reply: str, finish: str | None, listing: set[str]) -> str:
    """Why a reply that was cut before its last file's block closed gave that file to no one ("" if
    it was not cut so). A small model that loops inside a file is stopped there; told only that the
    reply had no usable file, it writes the same loop again."""
    if finish not in ("length", "repetition"):
        return ""
    path = form.open_file(reply, listing)
    if path is None:
        return ""
    how = "it repeated the same text over and over" if finish == "repetition" else "it reached the length limit"
    return (f"it was cut off while still writing {path or 'a file'} ({how}), so that file was not written: give it "
            "whole, once, and write each piece of code once, without repeating lines")


def _usable(ctx: CommandContext, reply: str, files: RoundFiles, must_act: bool,
            finish: str | None = None) -> tuple[list[FileWrite], str, bool]:
    """(the writes a reply gives, or [] and why not — a reason the next round quotes to the model, and
    whether the next round should ask for the function the task names alone). `finish`: the reply's
    finish reason, to say so when it was cut inside a file."""
    listing = set(project_files(ctx.workspace, 500))
    sources = {p: read_project_text(ctx, p) or "" for p in listing if p.endswith(".py") and not is_test_path(p)} \
        if enabled(ctx, "place_block_by_definitions") else None
    form = _form(ctx)
    found = form.read(reply, listing, sources)
    if any(f.how == "definitions" for f in found):
        applied(ctx, "place_block_by_definitions", paths=[f.path for f in found if f.how == "definitions"])
    cut = _cut_off(form, reply, finish, listing)
    if not found:
        return [], _TESTS_FIRST if finish == "stop_string" else cut or form.no_form, False
    writes: list[FileWrite] = []
    refused: list[str] = []
    echoed: list[str] = []
    for f in found:  # each file on its own: an echoed or refused file costs only itself
        if files.read(f.path) == f.content.encode():
            echoed.append(f.path)  # given back as it is (a project test too): no change, nothing to refuse
            continue
        if is_test_path(f.path) and f.path in listing and f.path not in files.before:
            refused.append(f"{f.path}: the project's tests must stay as they are")
            continue
        try:
            [write] = planned_writes(ctx.workspace, {"files": [{"path": f.path, "content": f.content}]},
                                     merge_partial=enabled(ctx, "merge_partial_file"))
            if write.merged_part:
                applied(ctx, "merge_partial_file", path=write.path)
            ctx.workspace.check_write(write.path, write.content, policy=ctx.policy)  # path policy, secret guard
        except AgentError as exc:
            refused.append(exc.message[:300])
            continue
        if files.read(write.path) != write.content.encode():
            writes.append(write)
        else:
            echoed.append(write.path)
    if refused:
        ctx.log("info", "builder round: files of the reply not written", reasons=refused[:5])
    if cut and not writes:
        return [], "; ".join([cut, *refused]), False
    same = unchanged_code(ctx.workspace, writes) if must_act else []
    if must_act and (same or (not writes and echoed and not refused)):
        # passing tests prove nothing about a change that changes nothing
        return [], *_no_change(ctx, same or echoed)
    if not writes:
        return [], "; ".join(refused) if refused else _ECHOED, False
    return writes, "", False


def _feedback(last: dict[str, Any], best: dict[str, Any], own: list[str], replied: bool = False,
              read: Reader | None = None) -> str:
    """What the previous round came to, for the next prompt. The tests' failures are always shown
    while they fail: a reply that could not be used leaves them as they were, and without them the
    next reply has nothing new to go on (a small model gives the same file back, round after round).
    `replied`: said after the model's own reply, where the files above are those it changed. `read`:
    the workspace's files, to quote the failing tests' code from."""
    if last["outcome"] == "unusable":
        why = f"\n## Your last reply could not be used\n{last['why']}.\n"
        return why + (_failures(best, "## The tests still fail on the files above\n", own, read)
                      if best.get("status") == "fail" else "")
    if last["outcome"] == "rolled back" and last.get("fresh"):
        # the failures of the code shown, not of the attempt that was undone
        return _failures(best, "## The tests still fail on the files above\nAn attempt from the code as it was "
                               "before did worse and was undone. ", own, read)
    if last["outcome"] == "rolled back":
        undone = "That change left the tests worse than before, so it was undone: " + (
            "the files are again as shown above. " if replied else "the files above show the best code so far. ")
    else:
        undone = "Your change is in place. " if replied else "The files above show the code with that change. "
    return _failures(last["tests"], f"## The tests failed after your last change\n{undone}", own, read)


def _failures(tests: dict[str, Any], heading: str, own: list[str] | None = None, read: Reader | None = None) -> str:
    tail = quoted_output(tests, _TAIL)
    code = failing_test_code(read, str(tests.get("output_tail") or ""), tail, _TEST_CODE) if read else ""
    ask = ("Find the cause of each failure and fix the code. A test you wrote for the task ("
           + ", ".join(own) + ") may be wrong itself: where it contradicts the task's words, fix that test "
           "instead.\n") if own else "Find the cause of each failure and fix the code (not the tests).\n"
    return (f"\n{heading}Test command: {tests.get('command')}\n```\n{tail}\n```\n"
            + (f"{_TEST_CODE_HEAD}\n{code}\n" if code else "") + ask)


def _progressed(last: dict[str, Any]) -> bool:
    """Whether the last round moved the tests forward. A round that gave nothing usable, was rolled
    back or passed no more tests is most likely answered alike again at a low temperature."""
    return last["outcome"] not in ("unusable", "rolled back") and last.get("improved", True)


def _temperature(n: int, stuck: bool) -> float:
    """The first round takes the model's most likely answer, as the model alone does; a round after
    one that moved no test forward is varied, as the same prompt at a low temperature brings the same
    reply back; the others stay near the likely answer."""
    return 0.0 if n == 1 else 0.6 if stuck else 0.2


def _answer_by(ctx: CommandContext, test_s: float) -> float | None:
    """When a round's reply is cut so that what it gave can still be written and tested in time."""
    if not enabled(ctx, "keep_cut_reply"):
        return None
    reserve = min(ctx.settings.test_timeout_s, _RESERVE_S + 2 * test_s) if ctx.settings.test_command else 5.0
    return ctx.deadline - reserve


def _stops(ctx: CommandContext, files: RoundFiles) -> tuple[str, ...]:
    """Where a reply ends: a project test file begun, first or after a closed block. It would be
    refused (the project's tests stay as they are), and writing it back costs a small model minutes,
    most often all of its round: one that began with it gave no change after it."""
    tests = [p for p in project_files(ctx.workspace, 500) if is_test_path(p) and p not in files.before]
    return tuple(start for p in tests for start in _form(ctx).starts(p))


def _prefills(ctx: CommandContext) -> bool:
    """Whether the server continues a trailing assistant message, so a reply can be begun for the model."""
    caps = capabilities_of(ctx.require_model())
    return caps is not None and caps.prefill


def _begun(ctx: CommandContext, last: dict[str, Any] | None, targets: list[str], fresh: bool) -> str:
    """The file the next reply is begun with for the model ("" for none): after a reply that gave no file
    of code, or for a fresh attempt, the first file to change. Shown the same prompt again, a small model
    most often begins the same way (with the tests it was shown first, or an empty block); asked the first
    round's prompt at a higher temperature, it often gives the file's name in an empty block and stops."""
    if not ((fresh or (last and last.get("why") in (_TESTS_FIRST, _form(ctx).no_form))) and targets
            and enabled(ctx, "begin_with_file")):
        return ""
    return targets[0] if _prefills(ctx) else ""


def _reasons(ctx: CommandContext, log: list[dict[str, Any]], best: dict[str, Any], fresh: bool, begun: str) -> bool:
    """Whether the next reply is asked for the failures' cause in words before its files: a round whose
    prompt shows the tests failing (not a fresh attempt, an ask for one function alone, or a reply begun
    with a file), unless a reply so asked in this command gave no usable file: a model that answers the ask
    with words alone does so again. See `FileForm.reason_rules`."""
    if fresh or begun or not log or log[-1].get("alone") or not enabled(ctx, "reason_before_fixing"):
        return False
    if any(e.get("reasoned") and e["outcome"] == "unusable" for e in log):
        return False
    return log[-1]["outcome"] != "unusable" or best.get("status") == "fail"


def _ask(ctx: CommandContext, messages: list[dict[str, str]], temperature: float, test_s: float,
         stop: tuple[str, ...] = (), start: str = "") -> tuple[str, str | None]:
    """The reply's text and finish reason; `start`: the text the reply is begun with as the model's
    turn, for it to continue (a file's path line and opening fence, or the first words of the cause)."""
    form = _form(ctx)
    request = ModelRequest(messages=[{"role": "system", "content": system_message(form)}, *messages,
                                     *([{"role": "assistant", "content": start}] if start else [])],
                           task_type="planning", role="builder", deadline=ctx.deadline, temperature=temperature,
                           max_tokens=ctx.settings.max_tokens, answer_by=_answer_by(ctx, test_s), stop=stop,
                           stop_loops=enabled(ctx, "stop_looping_reply"))
    reply = ctx.require_model().complete(request)
    if reply.finish_reason == "repetition":
        applied(ctx, "stop_looping_reply", chars=len(reply.text))
    text = reply.text
    if start:
        # A streamed reply holds only the rest; a plain one, or one answered anew, has the path line itself.
        if not text.lstrip().startswith(start.split("\n")[0]):
            text = start + (text if start == REASON_START else form.begun_rest(text))
    if reply.finish_reason == "stop_string":  # at a test file's path line: the blocks before it are closed
        applied(ctx, "stop_at_test_file", chars=len(text))
        return form.close(text), "stop_string"  # (a stop string that took the file's close too)
    if reply.finish_reason == "time":
        ctx.log("warn", "builder round: the reply was still being written when the round's time ran out; the "
                        "files it gave whole are used", chars=len(text))
        applied(ctx, "keep_cut_reply", chars=len(text))
    return text, reply.finish_reason


def _one_round(ctx: CommandContext, n: int, messages: list[dict[str, str]], files: RoundFiles, temperature: float,
               must_act: bool, test_s: float = 0.0, start: str = ""
               ) -> tuple[dict[str, Any], str, str]:
    """Ask, read the reply, write what it gives: (the round's log entry, the reply's words, the reply
    the next round may continue, or "")."""
    try:
        stops = _stops(ctx, files) if enabled(ctx, "stop_at_test_file") else ()
        reply, finish = _ask(ctx, messages, temperature, test_s, stops, start)
    except ShuttingDown:
        raise
    except AgentError as exc:
        ctx.log("warn", "builder round: the model call failed", code=exc.code, reason=exc.message[:300])
        why = f"the model call failed ({exc.code}: {exc.message[:200]})"
        return {"round": n, "outcome": "unusable", "why": why}, "", ""
    writes, why, alone = _usable(ctx, reply, files, must_act, finish)
    if not writes:
        ctx.audit.record("reply_unusable", task_id=ctx.cmd.task_id, round=n, reason=why[:300])
        # A reply cut off (a loop, the length limit, the round's time) or with no code in it is no turn
        # to continue: as its own, a small model writes the same loop or the same empty block again.
        kept = "" if finish in ("repetition", "length", "time") or not _form(ctx).holds_code(reply) else reply
        return {"round": n, "outcome": "unusable", "why": why, "alone": alone}, "", kept
    files.write(writes)
    return {"round": n, "outcome": "written", "files": [w.path for w in writes]}, \
        _form(ctx).prose(reply) or f"Wrote {', '.join(w.path for w in writes)}", reply


def _take_out_own_tests(ctx: CommandContext, files: RoundFiles, best: dict[str, Any]
                        ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """When the best state still fails and this command created test files: they are taken out if the
    project's own tests then pass, else put back (`test_ledger.py`)."""
    own = files.own_tests()
    if best.get("status") != "fail" or not own:
        return best, None
    tests, taken_out = TestLedger(ctx, own).settle(best, lambda: test_workspace(ctx))
    if taken_out:
        files.best.update(dict.fromkeys(own))
    return tests, taken_out


def _settle(ctx: CommandContext, files: RoundFiles, best: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """When the best state still fails: the code as it was, if its tests do better (True: withdrawn)."""
    if best.get("status") != "fail" or not files.changed() or not enabled(ctx, "withdraw_worse_change"):
        return best, False
    kept = files.best
    files.best = dict(files.before)
    files.roll_back()
    original = test_workspace(ctx)
    if rank(original) > rank(best):
        ctx.log("warn", "the tests do better on the code as it was: the change was withdrawn",
                files=sorted(files.before)[:10])
        applied(ctx, "withdraw_worse_change", passed=original.get("passed"), failed=original.get("failed"))
        return original, True
    files.best = kept
    files.roll_back()
    return best, False


def _nothing_to_change(ctx: CommandContext, log: list[dict[str, Any]], must_act: bool) -> bool:
    """`implement_changes` whose model, shown the findings, gave every file back as it was twice running,
    with the tests passing on the code as it is: the rounds end and the code stays (the next review
    decides again); more rounds of the same prompt bring the same reply and spend lorch's time."""
    if must_act or ctx.cmd.action != "implement_changes" or not ctx.settings.test_command \
            or not enabled(ctx, "stop_when_nothing_to_change"):
        return False
    if len(log) < 2 or not all(e.get("why") == _ECHOED for e in log[-2:]) or test_workspace(ctx)["status"] != "pass":
        return False
    applied(ctx, "stop_when_nothing_to_change", rounds=len(log))
    return True


def _continues(ctx: CommandContext, last: dict[str, Any], exchange: tuple[str, str] | None) -> bool:
    """Whether the next round continues the last exchange: its prompt showed the files as they now are
    (not a fresh attempt whose change was not kept), and its reply is there to be the model's own turn.
    Shown its own reply and what the tests made of it, a small model revises it, where shown the same
    code as a project file it most often gives it back; and the server reuses the exchange's prompt."""
    return (exchange is not None and bool(exchange[1].strip()) and not last.get("alone")
            and not (last.get("fresh") and last["outcome"] != "kept") and enabled(ctx, "feedback_in_conversation"))


def _round_prompt(ctx: CommandContext, prompt_for: Any, files: RoundFiles, log: list[dict[str, Any]],
                  best: dict[str, Any], fresh: bool, exchange: tuple[str, str] | None, reason: bool = False
                  ) -> tuple[list[dict[str, str]], str]:
    """The next round's messages, and the prompt that shows the files as they now are (the exchange
    the round after may continue). `fresh`: the last round moved no test forward, so this one starts
    again from the files as they were before the command, as the first round did: an independent
    attempt, where a small model shown its own failing code most often gives it back unchanged. The
    best state so far stays the one kept unless the new attempt does better. `reason`: the reply is
    asked for the failures' cause before its files."""
    if fresh:
        files.roll_back({**files.before, **files.start})
        applied(ctx, "fresh_attempt", best_passed=best.get("passed"), best_failed=best.get("failed"))
    written = [] if fresh else [p for p in files.before if p not in files.start]  # a test written first is a test
    user: str = prompt_for(PromptBuilder(ctx.settings.budget), written)
    own = files.own_tests()
    # After a reply that changed nothing, the one function the task names is asked for alone: a frame a
    # small model fills where it quotes a whole file back; the agent merges it into its place (py_merge.py).
    form = _form(ctx)
    rules = form.alone_rules if log and log[-1].get("alone") and not fresh else \
        form.reason_rules if reason else form.rules
    answer = f"\n## Your answer\n{rules} Do not change the project's existing tests.\n"
    if not log or fresh:
        return [{"role": "user", "content": user + answer}], user + answer
    read = (lambda rel: read_project_text(ctx, rel)) if enabled(ctx, "quote_failing_tests") else None
    single = user + _feedback(log[-1], best, own, read=read) + answer
    if _TEST_CODE_HEAD in single:
        applied(ctx, "quote_failing_tests", round=len(log) + 1)
    if not _continues(ctx, log[-1], exchange):
        return [{"role": "user", "content": single}], single
    assert exchange is not None
    said = _feedback(log[-1], best, own, replied=True, read=read).lstrip("\n") + answer
    if len(exchange[0]) + len(exchange[1]) + len(said) > _CONVERSATION_GROWTH * len(single):
        return [{"role": "user", "content": single}], single  # a long reply would crowd the context
    applied(ctx, "feedback_in_conversation", round=len(log) + 1)
    return [{"role": "user", "content": exchange[0]}, {"role": "assistant", "content": exchange[1]},
            {"role": "user", "content": said}], single


def build_in_rounds(ctx: CommandContext, prompt_for: Any, rounds: int, *, must_act: bool = False,
                    test_first: str = "", targets: list[str] | None = None) -> RoundsResult:
    """Up to `rounds` rounds; `prompt_for(budget, written)` is the builder's prompt with the files it wrote.
    `targets`: the files to change the prompt shows, in its order (a reply may be begun with the first).

    `must_act`: a change that leaves the code's behaviour as it was is no change (an `implement`
    whose goal is not about prose). `test_first`: where a test of the task goes if one is first asked for.
    The goal's own examples guide the first prompt only: the tests decide when the rounds end."""
    files = RoundFiles(ctx)
    written_first = test_of_the_task(ctx, test_first, lambda: prompt_for(PromptBuilder(ctx.settings.budget), []),
                                     lambda messages: _ask(ctx, messages, 0.0, 0.0)[0], _form(ctx))
    files.write(written_first)
    files.start = {w.path: w.content.encode() for w in written_first}
    testing = bool(ctx.settings.test_command)
    best: dict[str, Any] = {"status": "not_run",
                            "summary": "no test command configured (set --test-command or LUALLM_AGENT_TEST_COMMAND)"}
    log: list[dict[str, Any]] = []
    summary = ""
    test_s = 0.0  # the longest test run so far: the time a cut reply must leave
    exchange: tuple[str, str] | None = None  # the last round's prompt (files as they were then) and reply
    for n in range(1, max(1, rounds) + 1):
        if n > 1 and ctx.seconds_left() < _MIN_SECONDS:
            break
        stuck = bool(log) and not _progressed(log[-1])  # then vary the next reply
        # A fresh attempt sends the first round's prompt again: never twice running, as the round after one
        # shows the best state and its failures (a fresh prompt shows none, so fresh attempts alone never let
        # the model see why its best code fails); after a reply that changed nothing and has a function to be
        # asked for alone, this round asks for it (once: a reply to that ask that changes nothing again is
        # followed by a fresh attempt).
        asked_alone = bool(log) and log[-1].get("alone") and not (len(log) > 1 and log[-2].get("alone"))
        fresh = (stuck and best.get("status") == "fail" and files.changed() and enabled(ctx, "fresh_attempt")
                 and not log[-1].get("fresh") and not asked_alone)
        begun = _begun(ctx, log[-1] if log else None, targets or [], fresh)
        reason = _reasons(ctx, log, best, fresh, begun)
        messages, prompt_now = _round_prompt(ctx, prompt_for, files, log, best, fresh, exchange, reason)
        ctx.progress(f"round {n} of {rounds}: asking the model for the changed files", stage="implementing",
                     progress=min(0.9, 0.1 + 0.8 * (n - 1) / rounds))
        start = _form(ctx).begin(begun) if begun else REASON_START if reason and _prefills(ctx) else ""
        if begun:
            applied(ctx, "begin_with_file", path=begun)
        if reason:
            applied(ctx, "reason_before_fixing", round=n, begun=bool(start))
        entry, words, reply = _one_round(ctx, n, messages, files, _temperature(n, stuck), must_act, test_s, start)
        exchange = (prompt_now, reply)
        if fresh:
            entry["fresh"] = True
        if reason:
            entry["reasoned"] = True
        log.append(entry)
        if entry["outcome"] == "unusable":
            if fresh:
                files.roll_back()  # the best state back in place
            if _nothing_to_change(ctx, log, must_act):
                break
            continue
        summary = words
        if not testing:
            files.keep()
            break
        tests = entry["tests"] = test_workspace(ctx)
        test_s = max(test_s, float(tests.get("duration_s") or 0.0))
        if best["status"] == "not_run" or rank(tests) >= rank(best):
            entry["improved"] = best["status"] == "not_run" or rank(tests) > rank(best)
            best, entry["outcome"] = tests, "kept"
            files.keep()
        else:
            entry["outcome"] = "rolled back"
            files.roll_back()
        ctx.audit.record("builder_round", task_id=ctx.cmd.task_id, round=n, outcome=entry["outcome"],
                         tests=tests["status"], passed=tests.get("passed"), failed=tests.get("failed"))
        if tests["status"] == "pass":
            break
    if all(e["outcome"] == "unusable" for e in log):
        reasons = "; ".join(f"round {e['round']}: {e['why']}" for e in log)
        raise InvalidModelResponse(f"no round produced a usable change ({reasons})"[:1500])
    best, taken_out = _take_out_own_tests(ctx, files, best)
    best, withdrawn = _settle(ctx, files, best)
    shown = [{k: v for k, v in e.items() if k not in ("tests", "improved")} for e in log]
    return RoundsResult(best, len(log), summary, shown, files.changed(), withdrawn, taken_out, _form(ctx).name)
