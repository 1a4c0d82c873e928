"""The test files one builder command wrote: kept when the tests pass, taken out when they fail.

Measured under real lorch (Qwen2.5-Coder-1.5B, feature-cart): the first answer's code was right
and came with a new test that was wrong (it expected an empty cart with one unit left); the test
repairs could not mend the test, and lorch failed a run whose code passed the behavioural check.
The project's tests from before the command are the yardstick; a test the model added in this
command is its own claim and can be wrong either way. So when the tests still fail after the
repairs, the command's test files are put back as they were and the tests run again: if the
project's own tests then pass, the change stands and the payload says which tests were taken out
and how they failed; if they still fail, everything is left as the model wrote it and the
failure stands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.errors import AgentError
from agent.roles.changes import is_test_path
from agent.roles.context import CommandContext

__all__ = ["TestLedger"]

_TAIL = 1000


class TestLedger:
    __test__ = False  # not a pytest class

    def __init__(self, ctx: CommandContext) -> None:
        self.ctx = ctx
        self.before: dict[str, bytes | None] = {}  # test path -> its bytes before the command (None: new)

    def note(self, rel: str) -> None:
        """Call before writing `rel`: remembers a test file as it was before this command."""
        if is_test_path(rel) and rel not in self.before:
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

    def settle(self, tests: dict[str, Any],
               rerun: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(the tests' result, what was taken out or None) after the last repair."""
        if tests["status"] != "fail" or not self.before:
            return tests, None
        try:
            written = {rel: self._read(rel) for rel in self.before}
            self._put(self.before)
        except AgentError as exc:  # cannot put them back: leave the result as it is
            self.ctx.log("warn", "the command's tests could not be taken out", code=exc.code)
            return tests, None
        again = rerun()
        if again["status"] != "pass":  # not only the new tests fail: the model's work stays as written
            self._put(written)
            return tests, None
        taken = sorted(self.before)
        self.ctx.artifacts = [a for a in self.ctx.artifacts if a.path not in self.before]
        self.ctx.log("warn", "tests this change added still failed after the repairs; they were taken out and "
                     "the project's own tests pass", files=taken[:10])
        tail = str(tests.get("output_tail") or tests.get("summary") or "")[-_TAIL:]
        return again, {"files": taken, "output_tail": tail}
