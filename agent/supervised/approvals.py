"""Approval tiers (seed 000 §8): ask on a TTY, otherwise leave a pending-approval file and pause.

Tier values: `auto` (granted, audited), `prompt` (a yes/no question on the terminal), `manual`
(only a person outside the CLI). Without a terminal a person answers one request by id
(`luallm-agent approvals approve ID` / `reject ID`, or `"decision"` set in the file), then
`--resume`. `skill_promotion` is manual whatever the config says (`HomeConfig.tier`).

`--yes` skips only what §8 lets it: task confirmation, and path reads unless `path_read` is
`manual` — with a prompt, or on `--resume` for such requests already pending. It never answers a
write, a destructive overwrite, network access, skill promotion or a decision: those need a
person's answer to the one request they were shown. An answered request leaves
`pending_approvals/` for `state/approvals/` with its answer (`agent.approval_archive`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from agent.approval_archive import archive
from agent.atomic_json import write_json_atomic
from agent.clock import utc_now
from agent.supervised.events import TaskAudit
from agent.supervised.home import AgentHome, HomeConfig
from agent.supervised.state import read_json

__all__ = ["Approvals", "RUN_YES_SKIPS"]

RUN_YES_SKIPS = ("task_confirmation", "path_read")


class Approvals:
    def __init__(self, home: AgentHome, config: HomeConfig, audit: TaskAudit, *, ask: Callable[[str], bool] | None,
                 run_yes: bool = False, resume_yes: bool = False) -> None:
        self.home = home
        self.config = config
        self.audit = audit
        self.ask = ask            # None: no TTY
        self.run_yes = run_yes
        self.resume_yes = resume_yes

    def _mode(self, tier: str) -> str:
        return "manual" if tier == "decision" else self.config.tier(tier)

    def file_for(self, task: dict[str, Any], key: str, tier: str) -> str:
        digest = hashlib.sha256(key.encode()).hexdigest()[:12]
        return str(self.home.approvals_dir / f"{tier}_{task['id'][:8]}_{digest}.json")

    def need(self, task: dict[str, Any], tier: str, key: str, summary: str, **details: Any) -> str:
        """'approved', 'denied' or 'pending' for this request (recorded in the task)."""
        table: dict[str, Any] = task.setdefault("approvals", {})
        entry = table.get(key)
        if entry and entry["status"] in ("approved", "denied"):
            return str(entry["status"])
        mode = self._mode(tier)
        if entry is None:
            entry = {"tier": tier, "summary": summary, "status": "pending", "mode": mode,
                     "file": self.file_for(task, key, tier), "requested_at": utc_now(), "details": details}
            table[key] = entry
            self.audit.record("approval_requested", tier=tier, key=key, summary=summary, mode=mode, **details)
        if mode == "auto":
            return self._resolve(entry, "approved", "auto (config)")
        if self.run_yes and tier in RUN_YES_SKIPS and mode != "manual":
            return self._resolve(entry, "approved", "--yes")
        if self.resume_yes and tier in RUN_YES_SKIPS and mode != "manual" and entry.get("shown"):
            return self._resolve(entry, "approved", "--resume --yes")
        file_answer = self._file_answer(entry)
        if file_answer is not None:
            return self._resolve(entry, *file_answer)
        if mode == "prompt" and self.ask is not None:
            return self._resolve(entry, "approved" if self.ask(summary) else "denied", "terminal")
        self._write_pending(task, key, entry)
        return "pending"

    def _file_answer(self, entry: dict[str, Any]) -> tuple[str, str] | None:
        """(decision, who answered) from the pending file, None while it waits."""
        try:
            data = read_json(self._path(entry))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        decision = str(data.get("decision") or "").lower()
        by = str(data.get("answered_by") or "pending-approval file")
        if decision in ("approved", "yes", "true"):
            return "approved", by
        if decision in ("denied", "no", "false"):
            return "denied", by
        return None

    def _path(self, entry: dict[str, Any]) -> Any:
        from pathlib import Path

        return Path(entry["file"])

    def _write_pending(self, task: dict[str, Any], key: str, entry: dict[str, Any]) -> None:
        entry["shown"] = True
        path = self._path(entry)
        if path.exists():
            return
        write_json_atomic(path, {
            "task_id": task["id"], "tier": entry["tier"], "key": key, "summary": entry["summary"],
            "details": entry.get("details", {}), "requested_at": entry["requested_at"], "mode": entry["mode"],
            "decision": None,
            "how_to_answer": (f"luallm-agent approvals approve {path.stem} (or reject {path.stem}), then: "
                              "luallm-agent run --resume" + (" (approve = true, reject = false)"
                                                             if entry["tier"] == "decision" else ""))})

    def _resolve(self, entry: dict[str, Any], decision: str, by: str) -> str:
        entry.update(status=decision, decided_by=by, decided_at=utc_now())
        self.audit.record("approval_resolved", tier=entry["tier"], summary=entry["summary"], decision=decision, by=by)
        path = self._path(entry)
        try:
            request = read_json(path)
        except (OSError, ValueError):
            return decision  # never written (answered before any pause): nothing waits
        if isinstance(request, dict):
            request.update(decision=decision, decided_by=by, decided_at=entry["decided_at"])
            archive(path, request)
        else:
            path.unlink(missing_ok=True)
        return decision

    @staticmethod
    def pending(task: dict[str, Any]) -> list[dict[str, Any]]:
        return [e for e in (task.get("approvals") or {}).values() if e["status"] == "pending"]
