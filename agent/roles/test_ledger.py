"""The test files one builder command created: taken out when they still fail at the end.

Why: a model may write right code with a wrong new test that the rounds cannot mend, and lorch
would fail a run whose code is right. The project's tests from before the command are the
yardstick; a test the model added in this command is its own claim and can be wrong either way. So
when the tests still fail after the rounds, the command's new test files are removed and the tests
run again: if the project's own tests then pass, the change stands and the payload says which tests
were taken out and how they failed; else the test files are put back as written and the failure
stands (a change the code as it was beats is withdrawn by the rounds, `builder_rounds._settle`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.answering.strategies import applied, enabled
from agent.command_context import CommandContext
from agent.errors import AgentError

__all__ = ["TestLedger"]

_TAIL = 1000


class TestLedger:
    __test__ = False  # not a pytest class

    def __init__(self, ctx: CommandContext, own_tests: list[str]) -> None:
        self.ctx = ctx
        self.own_tests = own_tests  # test files this command created
        self._passed: dict[str, Any] = {}  # the passing run of the last _passes_without

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
               ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(the tests' result, the test files taken out or None) after the last round."""
        if tests["status"] != "fail" or not self.own_tests or not enabled(self.ctx, "take_out_own_tests"):
            return tests, None
        tail = str(tests.get("output_tail") or tests.get("summary") or "")[-_TAIL:]
        if not self._passes_without(rerun):
            return tests, None
        taken = sorted(self.own_tests)
        self.ctx.log("warn", "tests this change added still failed after the rounds; they were taken out and "
                     "the project's own tests pass", files=taken[:10])
        applied(self.ctx, "take_out_own_tests", files=taken[:10])
        return self._passed, {"files": taken, "output_tail": tail}

    def _passes_without(self, rerun: Callable[[], dict[str, Any]]) -> bool:
        """Remove the own tests and run the tests: True (left so, `_passed` set) when they pass; False
        after putting the test files back as written."""
        try:
            written = {rel: self._read(rel) for rel in self.own_tests}
            self._put(dict.fromkeys(self.own_tests))
        except AgentError as exc:  # cannot take them out: leave the result as it is
            self.ctx.log("warn", "the command's test files could not be taken out", code=exc.code)
            return False
        again = rerun()
        if again["status"] != "pass":
            self._put(written)
            return False
        self._passed = again
        self.ctx.artifacts = [a for a in self.ctx.artifacts if a.path not in written]
        return True
