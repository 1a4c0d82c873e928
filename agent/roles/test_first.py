"""A test of the task, asked for before the code where the project's tests do not check the task.

Where the project's tests pass on the code as it is, none of them checks the task, and the builder's
rounds would end on the first change that imports, right or not. A developer writes the test first:
the model is asked for a test of the task alone (`write_goal_tests`), its examples and rules, before
it writes the code. A test written with the code, or after it, checks what the code does; one written
from the task checks what it asks. A reply without a test that compiles costs only this call; a test
still failing at the end is taken out by the rounds (builder_rounds.py), as the model's own claim.
"""

from __future__ import annotations

from collections.abc import Callable

from agent.answering.fenced_files import FencedFile
from agent.answering.file_forms import FENCED, FileForm
from agent.answering.strategies import applied, enabled
from agent.command_context import CommandContext
from agent.edits.changes import FileWrite, is_test_path, planned_writes
from agent.errors import AgentError, ShuttingDown
from agent.fences import file_blocks
from agent.roles.testrun import test_workspace

__all__ = ["test_of_the_task"]


def _ask_for(path: str, form: FileForm) -> str:
    how = (f'tools.write("{path}", [==[ on a line, then the whole file, then ]==])' if form.name == "lua" else
           "The file's path on a line of its own, then the whole file in a fenced code block")
    return (f"\n## Your answer\nWrite only a new test file, {path}: unittest tests of what the task asks, each "
            "example it gives and each rule it states, importing the code as the project's tests do (the code may not "
            f"exist yet: do not write it). {how}. Say nothing else.\n")


def test_of_the_task(ctx: CommandContext, path: str, prompt: Callable[[], str],
                     ask: Callable[[list[dict[str, str]]], str], form: FileForm = FENCED) -> list[FileWrite]:
    """The test to put in place at `path` before the first round ([] where none is asked for or none
    came). `prompt()`: the builder's first prompt; `ask(messages)`: the model's reply; `form`: the
    text form the rounds ask for files in."""
    if not (path and ctx.settings.test_command and enabled(ctx, "write_goal_tests")) \
            or test_workspace(ctx)["status"] != "pass":
        return []
    ctx.progress("asking the model for a test of the task", stage="implementing", progress=0.05)
    try:
        reply = ask([{"role": "user", "content": prompt() + _ask_for(path, form)}])
    except ShuttingDown:
        raise
    except AgentError as exc:
        ctx.log("warn", "the test of the task was not written: the model call failed", code=exc.code)
        return []
    exists = ctx.workspace.is_file
    found = [f for f in form.read(reply, {path}, None) if is_test_path(f.path) and not exists(f.path, policy=ctx.policy)]
    blocks = [b for b in file_blocks(reply) if b.body.strip()]
    if not found and len(blocks) == 1:  # asked for one file by its path, a lone block without one is it
        found = [FencedFile(path, blocks[0].body, "asked")]
    test = next((f for f in found if f.path == path), found[0] if found else None)
    try:  # the checks every written file passes: it compiles, the path policy, the secret guard
        writes = planned_writes(ctx.workspace, {"files": [{"path": test.path, "content": test.content}]}) if test else []
        for w in writes:
            ctx.workspace.check_write(w.path, w.content, policy=ctx.policy)
    except AgentError as exc:
        ctx.log("warn", "the test of the task was not written", code=exc.code, reason=exc.message[:300])
        writes = []
    applied(ctx, "write_goal_tests", path=test.path if test else path, written=bool(writes))
    return writes
