"""The test files one builder command wrote: kept when the tests pass, taken out when they fail.

Why: a model may write right code with a wrong new test that the repairs cannot mend, and lorch
would fail a run whose code is right. The project's tests from before the command are the yardstick; a test the model added in this
command is its own claim and can be wrong either way. So when the tests still fail after the
repairs, the command's test files are put back as they were and the tests run again: if the
project's own tests then pass, the change stands and the payload says which tests were taken out
and how they failed.

If they still fail, every file the command wrote is put back as it was and the tests run once
more: when the project's tests pass on the code as it was, the change is withdrawn and the
command reports that (`changes_reverted`) instead of failing; lorch fails a whole run on one
failing `builder.completed`, and the reviewer sees the code as it was: a later `implement_changes` may
break code that was right one command earlier, and the repairs may not mend it. Only when even that fails does
the failure stand, with everything as the model wrote it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.answering.strategies import applied, enabled
from agent.command_context import CommandContext
from agent.edits.changes import is_test_path
from agent.errors import AgentError

__all__ = ["TestLedger"]

_TAIL = 1000


class TestLedger:
    __test__ = False  # not a pytest class

    def __init__(self, ctx: CommandContext) -> None:
        self.ctx = ctx
        self.before: dict[str, bytes | None] = {}  # path -> its bytes before the command (None: new)
        self._passed: dict[str, Any] = {}  # the passing run of the last _passes_with

    def note(self, rel: str) -> None:
        """Call before writing `rel`: remembers the file as it was before this command."""
        if rel not in self.before:
            self.before[rel] = self._read(rel)

    def _read(self, rel: str) -> bytes | None:
        ws = self.ctx.workspace
        return ws.read_bytes(rel, policy=self.ctx.policy) if ws.is_file(rel, policy=self.ctx.policy) else None

    def _put(self, state: dict[str, bytes | None]) -> None:
        ws = self.ctx.workspace
        for rel, data in state.items():
            if data is None:
                if ws.is_file(rel, policy=self.ctx.policy):
                    ws.remove(rel, policy=self.ctx.policy)
            else:
                ws.write_atomic(rel, data, policy=self.ctx.policy)

    def settle(self, tests: dict[str, Any], rerun: Callable[[], dict[str, Any]]
               ) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]:
        """(the tests' result, the test files taken out or None, the change withdrawn or None) after
        the last repair."""
        if tests["status"] != "fail" or not self.before:
            return tests, None, None
        tail = str(tests.get("output_tail") or tests.get("summary") or "")[-_TAIL:]
        own_tests = {rel: data for rel, data in self.before.items() if is_test_path(rel)}
        if own_tests and enabled(self.ctx, "take_out_own_tests") and self._passes_with(own_tests, rerun) is not None:
            taken = sorted(own_tests)
            self.ctx.log("warn", "tests this change added still failed after the repairs; they were taken out and "
                         "the project's own tests pass", files=taken[:10])
            applied(self.ctx, "take_out_own_tests", files=taken[:10])
            return self._passed, {"files": taken, "output_tail": tail}, None
        if len(own_tests) < len(self.before) and enabled(self.ctx, "withdraw_worse_change") \
                and self._passes_with(self.before, rerun) is not None:
            undone = sorted(self.before)
            self.ctx.log("warn", "the change failed the project's tests after the repairs, and they pass on the code "
                         "as it was: the change was withdrawn", files=undone[:10])
            applied(self.ctx, "withdraw_worse_change", files=undone[:10])
            return self._passed, None, {"files": undone, "output_tail": tail}
        return tests, None, None

    def _passes_with(self, state: dict[str, bytes | None], rerun: Callable[[], dict[str, Any]]) -> bool | None:
        """Put `state` back and run the tests: True (left so, `_passed` set) when they pass; None after
        putting the model's files back as written."""
        try:
            written = {rel: self._read(rel) for rel in state}
            self._put(state)
        except AgentError as exc:  # cannot put them back: leave the result as it is
            self.ctx.log("warn", "the command's files could not be put back", code=exc.code)
            return None
        again = rerun()
        if again["status"] != "pass":
            self._put(written)
            return None
        self._passed = again
        self.ctx.artifacts = [a for a in self.ctx.artifacts if a.path not in state]
        return True
