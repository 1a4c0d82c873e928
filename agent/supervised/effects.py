"""A node's file writes as a journal: computed once, staged, approved, applied once.

Why: `kill -9` may land anywhere, and `--resume` re-enters the node that was `running`. Model
replies and plan results are not deterministic, so redoing the computation could write
something else, and redoing a write could clobber a person's edit. So a node's work is split:

1. compute (model call, sandboxed plan with read-only tools): no effect outside the task dir;
2. stage: each file's bytes go to `tasks/<id>/artifacts/node_<N>/<k>`, and the journal entry
   `{path, sha256, bytes, before_sha256, status: staged}` is saved in `current_task.json`;
3. apply: write the target atomically from the staged bytes, then mark the entry `applied`.

On resume a node with a staged journal is never recomputed. An entry still `staged` is applied
only if the target does not already hold the journaled digest (a crash between the rename and the
journal update leaves it there); a whole-file atomic write of the same bytes is idempotent, so no
effect happens twice and none happens half.
"""

from __future__ import annotations

import hashlib
import os
import signal
from typing import Any

from agent.atomic_json import write_json_atomic
from agent.errors import AgentError, ArtifactWriteFailed
from agent.supervised.events import TaskAudit
from agent.supervised.paths import NodePaths
from agent.supervised.state import TaskFiles

__all__ = ["EffectJournal", "sha256"]


def _failpoint(name: str) -> None:
    """Crash-consistency tests: SIGKILL ourselves at the worst instant (the file written, the journal not)."""
    if os.environ.get("LUALLM_AGENT_FAILPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class EffectJournal:
    def __init__(self, files: TaskFiles, paths: NodePaths, audit: TaskAudit) -> None:
        self.files = files
        self.paths = paths
        self.audit = audit

    def current_digest(self, path: str) -> str | None:
        located = self.paths.locate(path)
        try:
            data = located.workspace.read_bytes(located.rel, policy=located.policy)
        except (AgentError, OSError):
            return None
        return sha256(data)

    def stage(self, node: dict[str, Any], path: str, content: bytes) -> dict[str, Any]:
        self.paths.locate(path)  # refuse now, before anything is staged
        k = len(node["effects"])
        staged = self.files.artifacts / f"node_{node['id']}" / f"{k}.bin"
        staged.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_json_atomic(staged.with_suffix(".json"), {"path": path, "sha256": sha256(content)})
        tmp = staged.with_suffix(".tmp")
        tmp.write_bytes(content)
        tmp.replace(staged)
        effect = {"path": path, "sha256": sha256(content), "bytes": len(content),
                  "staged": str(staged.relative_to(self.files.dir)), "before_sha256": self.current_digest(path),
                  "status": "staged"}
        node["effects"].append(effect)
        return effect

    def apply(self, effect: dict[str, Any]) -> str:
        """Write the staged bytes to the target unless it already holds them; 'applied' or 'already'."""
        if effect["status"] == "applied":
            return "already"
        located = self.paths.locate(effect["path"])
        if self.current_digest(effect["path"]) == effect["sha256"]:
            effect["status"] = "applied"
            self.audit.record("file_write", path=effect["path"], sha256=effect["sha256"], bytes=effect["bytes"],
                              outcome="already_present")
            return "already"
        data = (self.files.dir / effect["staged"]).read_bytes()
        if sha256(data) != effect["sha256"]:
            raise ArtifactWriteFailed(f"staged copy of {effect['path']} does not match its journal digest",
                                      path=effect["path"], reason="staged_corrupt")
        # Audited before the write (§9: "opened for writing"), so a crash right after it is still on record.
        self.audit.record("file_write", path=effect["path"], sha256=effect["sha256"], bytes=effect["bytes"],
                          outcome="writing")
        located.workspace.write_atomic(located.rel, data, policy=located.policy)
        _failpoint("after_write")
        effect["status"] = "applied"
        return "applied"
