"""The §9 audit entries of supervised mode: `{"ts", "event", "task_id", "data": {...}}` per line.

`TaskAudit` is an `AuditLog` whose entries take that shape, so everything that audits through an
`AuditLog` (luallm calls, plan runs, skill tests) lands in `state/audit_log.jsonl` schema-valid and
tagged with the task. Rotation is by size and count from `config.json` (`audit.max_size_mb`,
`audit.max_files`): `audit_log.jsonl` → `audit_log.jsonl.1` … `.N`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.audit import AuditLog
from agent.redact import Redactor

__all__ = ["TaskAudit", "SEED_EVENTS", "RENAMED"]

# Seed 000 §9's table; supervised mode emits each of these where it applies.
SEED_EVENTS = (
    "task_start", "task_end", "task_paused", "task_budget_exceeded", "graph_generated", "graph_validation_failed",
    "node_start", "node_complete", "node_retry", "node_failed_final", "llm_call", "llm_response", "luallm_exec",
    "model_start", "model_not_running", "model_oom", "model_fallback", "skill_draft", "skill_test_run",
    "skill_rework", "approval_requested", "approval_resolved", "file_read", "file_write", "sandbox_violation",
)
# Names other modules use for the same thing.
RENAMED = {"luallm_call": "luallm_exec"}


class TaskAudit(AuditLog):
    """Audit entries for one home, tagged with the current task."""

    def __init__(self, path: Path, *, max_bytes: int, keep: int, task_id: str | None = None) -> None:
        super().__init__(path, Redactor(), max_bytes=max_bytes, keep=keep, stderr=False, anchor=path.parent)
        self.task_id = task_id

    def record(self, event: str, **fields: Any) -> None:
        task_id = fields.pop("task_id", None) or self.task_id
        data = fields.pop("data", None)
        payload = dict(data) if isinstance(data, dict) else {}
        payload.update(fields)
        super().record(RENAMED.get(event, event), task_id=task_id, data=payload)
        if event == "plan_tool_call" and payload.get("tool") in ("read", "list", "glob", "grep"):
            args = payload.get("args")
            path = args.get("path") if isinstance(args, dict) else None
            super().record("file_read", task_id=task_id, data={"path": path, "tool": payload.get("tool"),
                                                               "ok": payload.get("ok"), "run_id": payload.get("run_id")})
