"""The builder's and reviewer's view of the project's tests: run within the command's deadline,
and quoted into a prompt as evidence (`agent.test_command` runs them).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from agent.test_command import run_tests

if TYPE_CHECKING:
    from agent.command_context import CommandContext

__all__ = ["test_workspace", "tests_section", "quoted_output"]

_DURATION = re.compile(r"\b(in|after|took) \d+(?:\.\d+)?s\b")


def test_workspace(ctx: CommandContext) -> dict[str, Any]:
    """The configured test command, run in the workspace within the command's deadline."""
    ctx.progress("running the tests", stage="testing", progress=0.8)
    tests = run_tests(ctx.settings.test_command, str(ctx.workspace.root),
                      min(ctx.settings.test_timeout_s, max(1.0, ctx.seconds_left())))
    ctx.log("info", "tests ran", status=tests["status"], passed=tests.get("passed"), failed=tests.get("failed"))
    return tests


def tests_section(tests: dict[str, Any], tail_chars: int = 1200) -> str:
    """A prompt section stating what the test command reported: evidence a judgement can rest on."""
    # The command itself is left out: it names this machine's interpreter, and the verdict needs the result.
    head = f"## The project's tests, run now\nResult: {tests['status']}"
    summary = str(tests.get("summary") or "")
    if summary:
        head += f" ({summary})"
    if tests["status"] == "pass":
        return head + "\n"
    tail = quoted_output(tests, tail_chars)
    return head + (f"\n```\n{tail}\n```\n" if tail else "\n")


def quoted_output(tests: dict[str, Any], chars: int) -> str:
    """The failures for a prompt, its timings masked (the same failure asks the same question): the
    digest of one traceback per kind of error where it fits (`agent.test_output`), else the tail."""
    digest = str(tests.get("failures") or "")
    tail = str(tests.get("output_tail") or tests.get("summary") or "")[-chars:]
    text = digest if digest and len(digest) <= chars else tail
    return _DURATION.sub(lambda m: f"{m.group(1)} …s", text)
