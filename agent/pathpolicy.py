"""Which workspace paths a writer or a reader may touch: the one rule behind every door.

`Workspace` applies a policy to the normalised path (`.` and `..` folded, absolute paths inside
the root made relative), never to the string the model sent: `./.env`, `src/../.git/config` and
`src/../receipts/x` are judged as `.env`, `.git/config` and `receipts/x`. Symlinks are never
followed at all (see `workspace`), so a link into `receipts/` cannot launder a path either.

The base rule, for every writer:
- a dot-path component (`.git/hooks/pre-commit`, `.env`, `src/.npmrc`) is protected: such files
  hold credentials or code that other programs run;
- the agent's and lorch's bookkeeping (`receipts/`, `logs/`, `events/`, `state/`, `snapshots/`,
  `transcripts/`) is protected: a forged receipt would be replayed as the agent's own answer;
- `reviews/` and `spec_notes/` are written only by the reviewer and the spec maintainer, each
  only its own task's file.
Model-facing reads (plan tools, command arguments) may not open dot-paths or bookkeeping either;
the agent's own reads (prompts, receipts) see every file inside the root.

Role-specific allowances are explicit and narrow: a policy names the exact files (or the one
directory, with a trailing `/`) its writer may write despite the base rule, and the exact files it
must not write besides it (an intake never writes the plan or spec files).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from agent.errors import PathRejected

__all__ = ["PathPolicy", "MODEL", "AGENT", "AGENT_DIR", "BOOKKEEPING_DIRS", "ROLE_OUTPUT_DIRS", "for_role",
           "records_commands_must_not_touch"]

# What the agent itself keeps in the workspace (audit log, plan runs, spilled payloads).
AGENT_DIR = "logs/luallm-agent"
# The agent's and lorch's own records: no model-driven read or write goes there.
BOOKKEEPING_DIRS = frozenset({"receipts", "events", "state", "logs", "snapshots", "transcripts"})
# Feedback files lorch's loop reads; each is written by one role for one task.
ROLE_OUTPUT_DIRS = frozenset({"reviews", "spec_notes"})
# What a command (a test run, a plan's tools.run) must never change: the agent's records always;
# lorch's where lorch owns the workspace (its lorch.json at the root) — elsewhere a project may
# have a state/ or events/ of its own that its tests write.
_AGENT_RECORDS = ("receipts", AGENT_DIR)
_LORCH_RECORDS = ("events", "state", "snapshots", "transcripts", "reviews", "spec_notes")


def records_commands_must_not_touch(root: str) -> list[str]:
    """Absolute paths of the record directories under workspace `root` that commands see read-only
    (those that exist: the agent serving lorch creates its own before the first command)."""
    rels = [*_AGENT_RECORDS, *(_LORCH_RECORDS if os.path.isfile(os.path.join(root, "lorch.json")) else ())]
    paths = [os.path.join(root, rel) for rel in rels]
    return [p for p in paths if os.path.isdir(p) and not os.path.islink(p)]


@dataclass(frozen=True)
class PathPolicy:
    """Who is touching the workspace: the base rule plus this writer's narrow exceptions."""

    writer: str
    allow: tuple[str, ...] = ()       # exact paths, or one directory written with a trailing "/"
    deny: tuple[str, ...] = ()        # exact paths (or a directory with a trailing "/") refused besides the base rule
    deny_reason: str = "plan or spec files"   # what the denied paths are, for the message
    trusted_reads: bool = False       # the agent's own reads see every file inside the root

    def allowing(self, *paths: str) -> PathPolicy:
        return replace(self, allow=(*self.allow, *paths))

    def denying(self, *paths: str, reason: str | None = None) -> PathPolicy:
        return replace(self, deny=(*self.deny, *paths), deny_reason=reason or self.deny_reason)

    def _allowed(self, key: str) -> bool:
        return any(key == a or (a.endswith("/") and key.startswith(a)) for a in self.allow)

    def check_write(self, key: str, shown: str) -> None:
        """Raise PathRejected unless this writer may write the normalised path `key`."""
        if not key:
            return  # the root itself: write_atomic refuses it as "not a file path"
        if self._allowed(key):
            return
        low = key.lower()
        if any(low == d.lower() for d in self.deny):
            raise PathRejected(f"{shown} is protected: {self.writer} never writes {self.deny_reason}", path=shown,
                               reason="protected")
        if any(d.endswith("/") and (low + "/").startswith(d.lower()) for d in self.deny):
            raise PathRejected(f"{shown} is protected: {self.writer} never writes {self.deny_reason}", path=shown,
                               reason="protected")
        _base_rule(key, shown, "write", writers_dirs=True)

    def check_read(self, key: str, shown: str) -> None:
        """Raise PathRejected unless this reader may open the normalised path `key`."""
        if self.trusted_reads or not key or self._allowed(key):
            return
        _base_rule(key, shown, "read", writers_dirs=False)


def _base_rule(key: str, shown: str, verb: str, *, writers_dirs: bool) -> None:
    parts = key.split("/")
    dot = next((p for p in parts if p.startswith(".")), None)
    if dot is not None:
        raise PathRejected(f"{shown} is protected: dot-paths ({dot}) hold credentials and hooks; plans, "
                           f"answers and commands may not {verb} them", path=shown, reason="protected", component=dot)
    top = parts[0]
    if top in BOOKKEEPING_DIRS:
        raise PathRejected(f"{shown} is protected: {top}/ is the agent's and lorch's bookkeeping; plans, "
                           f"answers and commands may not {verb} it", path=shown, reason="protected", component=top)
    if writers_dirs and top in ROLE_OUTPUT_DIRS:
        raise PathRejected(f"{shown} is protected: {top}/ is written only by the {_OWNER[top]}, one file "
                           "per task",
                           path=shown, reason="protected", component=top)


_OWNER = {"reviews": "reviewer", "spec_notes": "spec maintainer"}

# Builder answers, builder plans' tools and command arguments: the base rule, no exceptions.
MODEL = PathPolicy("the model")
# The agent's own files: receipts and its log folder; it reads everything inside the root.
AGENT = PathPolicy("the agent", allow=("receipts/", f"{AGENT_DIR}/"), trusted_reads=True)


def for_role(role: str, safe_task_id: str) -> PathPolicy:
    """What a role's own writes may touch: the base rule plus that role's one exception.

    The spec maintainer's second exception, the spec file it edits, is added where it is found.
    """
    if role == "reviewer":
        return PathPolicy("the reviewer", allow=(f"reviews/{safe_task_id}.json",))
    if role == "spec_maintainer":
        return PathPolicy("the spec maintainer", allow=(f"spec_notes/{safe_task_id}.json",))
    if role == "orchestration":
        return PathPolicy("an intake")  # its plan and spec files are added per command (`denying`)
    return MODEL
