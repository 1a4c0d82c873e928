"""The files a builder command changes, round by round: as they were before it, and its best state."""

from __future__ import annotations

from agent.command_context import CommandContext
from agent.edits.changes import FileWrite, is_test_path

__all__ = ["RoundFiles"]


class RoundFiles:
    """The files this command changed: as they were before it, and the best state reached so far."""

    def __init__(self, ctx: CommandContext) -> None:
        self.ctx = ctx
        self.before: dict[str, bytes | None] = {}
        self.best: dict[str, bytes | None] = {}
        self.start: dict[str, bytes | None] = {}  # what a fresh attempt starts from besides `before`: a test written first

    def read(self, rel: str) -> bytes | None:
        ws, policy = self.ctx.workspace, self.ctx.policy
        return ws.read_bytes(rel, policy=policy) if ws.is_file(rel, policy=policy) else None

    def write(self, writes: list[FileWrite]) -> None:
        for w in writes:
            if w.path not in self.before:
                self.before[w.path] = self.read(w.path)
                self.best.setdefault(w.path, self.before[w.path])
            self.ctx.write(w.path, w.content)

    def keep(self) -> None:
        self.best = {rel: self.read(rel) for rel in self.before}

    def roll_back(self, to: dict[str, bytes | None] | None = None) -> None:
        """Put the best state back (or `to`); a file it did not have is removed and no longer an artifact."""
        for rel, data in (self.best if to is None else to).items():
            if self.read(rel) == data:
                continue
            if data is None:
                self.ctx.workspace.remove(rel, policy=self.ctx.policy)
                self.ctx.artifacts = [a for a in self.ctx.artifacts if a.path != rel]
            else:
                self.ctx.write(rel, data)

    def changed(self) -> bool:
        return any(self.read(rel) != data for rel, data in self.before.items())

    def own_tests(self) -> list[str]:
        """The test files this command created that are now in place."""
        return sorted(rel for rel, data in self.before.items()
                      if data is None and is_test_path(rel) and self.read(rel) is not None)
