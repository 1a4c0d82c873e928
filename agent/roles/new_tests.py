"""After the builder's change: a test for the new behaviour, when the change came without one.

Measured under real lorch with Qwen2.5-Coder-1.5B: correct-looking code with a logic slip
(`fizzbuzz` without "FizzBuzz", `Cart.remove` keeping an item at quantity 0), no test of its
own, the project's old tests passing, and a reviewer of the same size approving it. The
builder's test repairs only start when a test fails, so the agent asks for the test the change
lacks, as a separate answer that may only touch test files: the model does not have to repeat
its code, and a wrong implementation now fails a test it can be shown.

Asked only for `implement`, only when the project already has tests (so it has a test layout
and the test command runs them) and the change wrote source files but no test file; never fatal:
without a valid answer the change stands as it was, with a `warn` log.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from agent.answers import AnswerSpec, InvalidAnswer, obtain_answer
from agent.errors import AgentError, ShuttingDown
from agent.roles.changes import FILE_SHAPE, FileWrite, is_test_path, planned_writes
from agent.roles.context import CommandContext
from agent.roles.project_files import project_files

__all__ = ["wants_tests", "ask_for_tests", "wants_goal_test", "ask_goal_test", "goal_test_writes"]

_SOURCE_SUFFIXES = {".py", ".js", ".ts", ".go", ".rs", ".rb", ".java", ".lua", ".c", ".cc", ".cpp", ".sh"}
_NAMED_FILE = re.compile(r"[\w./-]+(?:" + "|".join(re.escape(s) for s in sorted(_SOURCE_SUFFIXES)) + r")\b")


def wants_tests(ctx: CommandContext, written: list[str]) -> bool:
    if ctx.cmd.action != "implement" or not ctx.settings.test_command or ctx.settings.add_tests != "auto":
        return False
    if not any(PurePosixPath(p).suffix in _SOURCE_SUFFIXES and not is_test_path(p) for p in written):
        return False
    if any(is_test_path(p) for p in written):
        return False
    return _has_tests(ctx)


def _has_tests(ctx: CommandContext) -> bool:
    return any(is_test_path(p) for p in project_files(ctx.workspace, 2000))


def _suggested(ctx: CommandContext, written: list[str]) -> str:
    """Where the test goes: the project's test folder, next to its existing tests."""
    tests = [p for p in project_files(ctx.workspace, 2000) if is_test_path(p)]
    folder = str(PurePosixPath(tests[0]).parent) if tests else "tests"
    source = next((PurePosixPath(p) for p in written if not is_test_path(p)), PurePosixPath("goal.py"))
    stem, suffix = source.stem, source.suffix
    name = f"test_{stem}{suffix}" if suffix == ".py" else f"{stem}_test{suffix}"
    return name if folder in ("", ".") else f"{folder}/{name}"


def _only_tests(answer: dict[str, Any], target: str, code_note: str) -> None:
    bad = [e.get("path") for e in (answer.get("files") or []) + (answer.get("edits") or [])
           if isinstance(e, dict) and not is_test_path(str(e.get("path", "")))]
    if bad:
        raise InvalidAnswer(f"this answer may only add or change test files; {', '.join(map(str, bad[:5]))} "
                            f"is not one: {code_note}")
    if not answer.get("files") and not answer.get("edits"):
        raise InvalidAnswer(f"give the test in files, like {FILE_SHAPE.replace('src/app.py', target)}")


def _obtain_tests(ctx: CommandContext, request: str, target: str, why: str, code_note: str) -> dict[str, Any] | None:
    """A test-only answer to `request` (code entries are sent back, then dropped); None if none came."""
    def check(answer: dict[str, Any]) -> None:
        _only_tests(answer, target, code_note)
        for w in planned_writes(ctx.workspace, answer):
            ctx.workspace.check_write(w.path, w.content, policy=ctx.policy)

    def salvage(answer: dict[str, Any]) -> dict[str, Any] | None:
        # Measured (1.5B): the test request answered with the code file again, twice. Its test
        # files, if any, are still worth keeping; the code entries are dropped.
        kept = {key: [e for e in answer.get(key) or [] if isinstance(e, dict) and is_test_path(str(e.get("path", "")))]
                for key in ("files", "edits")}
        if not kept["files"] and not kept["edits"]:
            return None
        ctx.log("info", "test answer: kept its test files, dropped the rest")
        return {**answer, **kept}

    spec = AnswerSpec("builder", "planning", check, salvage=salvage, guard_answer=False)
    try:
        return obtain_answer(ctx, spec, request).data
    except ShuttingDown:
        raise
    except AgentError as exc:  # the change stands without its test
        ctx.log("warn", why, code=exc.code, reason=exc.message[:300])
        return None


def ask_for_tests(ctx: CommandContext, user: str, written: list[str]) -> list[FileWrite]:
    """The test files the model adds for the change just written ([] when none came)."""
    target = _suggested(ctx, written)
    request = (f"{user}\n## Now: a test for your change\nYour change to {', '.join(written)} is written (shown "
               f"above). The project's tests do not check it yet. Add a test, e.g. in {target}, that checks "
               "each behaviour the goal states, with the exact values and edge cases it names (use the same "
               "test framework as the existing tests). Give only test files; do not change the code.")
    ctx.progress("asking the model for a test of the change", stage="implementing", progress=0.7)
    answer = _obtain_tests(ctx, request, target, "no test added for the change", "your code change is already written")
    return planned_writes(ctx.workspace, answer) if answer else []


# -- the goal test: written from the goal before the code (kept only if it passes: test_ledger) --

def wants_goal_test(ctx: CommandContext) -> bool:
    return (ctx.cmd.action == "implement" and bool(ctx.settings.test_command)
            and ctx.settings.add_tests == "goal" and _has_tests(ctx))


def ask_goal_test(ctx: CommandContext, user: str) -> dict[str, Any] | None:
    """A test of what the goal states, asked before the code exists (the answer, held; None if none).

    Written blind, it cannot copy the code's slip: measured with `--add-tests auto`, the 1.5B's
    test written after its code expected `[0.5, 0]` after removing the last unit, as its code did.
    """
    goal = ctx.cmd.inputs.get("goal")
    named = [m for m in _NAMED_FILE.findall(goal if isinstance(goal, str) else "") if not is_test_path(m)]
    target = _suggested(ctx, named)
    request = (f"{user}\n## Now: a test of the goal, before the code\nThe code for this task is not written yet; "
               f"a separate answer will write it. Write a test, e.g. in {target}, that checks each behaviour the "
               "goal states, with the exact values and edge cases it names, using the same test framework as the "
               "existing tests. Test what the goal says the code must do, not what the code does today. Give "
               "only test files.")
    ctx.progress("asking the model for a test of the goal", stage="planning", progress=0.05)
    return _obtain_tests(ctx, request, target, "no test of the goal came; the change goes on without one",
                         "the code is written by a separate answer")


def goal_test_writes(ctx: CommandContext, answer: dict[str, Any], written: list[str]) -> list[FileWrite]:
    """The goal test's files, applied to the workspace as the change left it ([] when not used)."""
    # Used beside a test the change brought too: measured (1.5B, feature-cart), the code answer
    # came with a test of its own that missed the slip the goal test was written to catch.
    if not any(PurePosixPath(p).suffix in _SOURCE_SUFFIXES and not is_test_path(p) for p in written):
        ctx.log("info", "goal test not used: the change wrote no code")
        return []
    try:
        return planned_writes(ctx.workspace, answer)
    except AgentError as exc:  # its edits no longer apply to the files as they are now
        ctx.log("warn", "goal test not used", code=exc.code, reason=exc.message[:300])
        return []
