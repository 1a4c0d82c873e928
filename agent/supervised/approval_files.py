"""The requests in `state/pending_approvals/`, as a person sees them: list, find by id, answer.

A request's id is its file name without `.json` (`path_write_1a2b3c4d_5e6f…`, `skill_1_<uuid>`).
`waiting` is what `doctor` counts: a request nobody has answered yet. Answering writes the
person's decision into the file; the task applies it on `run --resume` and only then does the
request move to `state/approvals/`. Skill promotion cannot be approved here: it is a person's own
`cp` into `skills/allowed/` (seed 000 §7.4), which `skills resume` prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.atomic_json import write_json_atomic
from agent.clock import utc_now
from agent.errors import SupervisedError
from agent.supervised.home import AgentHome
from agent.supervised.state import read_json

__all__ = ["Request", "requests", "find", "answer", "ANSWERED_BY"]

ANSWERED_BY = {True: "luallm-agent approvals approve", False: "luallm-agent approvals reject"}
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True)
class Request:
    id: str
    path: Path
    tier: str
    task_id: str | None
    summary: str
    answer: str | None          # the person's answer not yet applied by `run --resume`
    waiting: bool               # nobody has answered it yet
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tier": self.tier, "task_id": self.task_id, "summary": self.summary,
                "answer": self.answer, "waiting": self.waiting, "path": str(self.path)}


def _request(path: Path) -> Request | None:
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get("kind") == "skill_promotion":
        status = str(data.get("status"))
        summary = f"promote skill {data.get('skill')} v{data.get('version')} ({status})"
        # awaiting_promotion still waits: for the person's cp, which only they can do
        return Request(path.stem, path, "skill_promotion", None, summary, None,
                       status in ("pending", "awaiting_promotion"), data)
    decision = data.get("decision")
    return Request(path.stem, path, str(data.get("tier")), data.get("task_id"), str(data.get("summary")),
                   str(decision) if decision is not None else None, decision is None, data)


def requests(home: AgentHome) -> list[Request]:
    """Every readable request in `pending_approvals/`, oldest first."""
    if not home.approvals_dir.is_dir():
        return []
    paths = sorted(home.approvals_dir.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name))
    return [r for r in map(_request, paths) if r is not None]


def find(home: AgentHome, request_id: str) -> Request:
    if not _ID.match(request_id):
        raise SupervisedError(f"not an approval id: {request_id!r}", request_id=request_id)
    path = home.approvals_dir / f"{request_id}.json"
    found = _request(path) if path.is_file() else None
    if found is None:
        done = home.state_dir / "approvals" / f"{request_id}.json"
        hint = (f" (already answered: {done})" if done.is_file()
                else "; see `luallm-agent approvals list`")
        raise SupervisedError(f"no pending approval {request_id!r}{hint}", request_id=request_id)
    return found


def answer(home: AgentHome, request: Request, yes: bool) -> None:
    """Write the person's answer into the pending file (`run --resume` applies it)."""
    if request.tier == "skill_promotion" and not yes:
        from agent.skills.lifecycle import SkillLifecycle

        SkillLifecycle(home.skills()).decide(request.path, dict(request.data), False)
        return
    if request.tier == "skill_promotion":
        raise SupervisedError(
            f"{request.id} is a skill promotion: only a person's own cp into skills/allowed/ promotes a skill; "
            "`luallm-agent skills resume` shows the panel and prints the commands", request_id=request.id)
    decision = ("true" if yes else "false") if request.tier == "decision" else ("approved" if yes else "denied")
    write_json_atomic(request.path, {**request.data, "decision": decision, "answered_by": ANSWERED_BY[yes],
                                     "answered_at": utc_now()})
