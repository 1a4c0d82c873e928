"""The supervised task's vocabulary: its states, exit codes, a new task's record, what a run returns.

Shared by the state machine's modules (`machine_core`, `graph_steps`, `machine`) and the CLI that
starts a run, so that none of them has to import the machine to name a state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from agent.supervised.home import HomeConfig
from agent.supervised.state import STATE_VERSION

__all__ = ["RunOptions", "Outcome", "Pause", "Stop", "new_task", "EXIT_COMPLETE", "EXIT_FAILED", "EXIT_PAUSED",
           "EXIT_STOPPED", "STATES", "PENDING", "PLANNING", "GRAPH_EXEC", "SKILL_DRAFT", "SKILL_TEST", "APPROVAL",
           "REWORK", "MODEL_WAIT", "COMPLETE", "FAILED", "STOPPED"]

EXIT_COMPLETE, EXIT_FAILED, EXIT_PAUSED, EXIT_STOPPED = 0, 1, 3, 4
PENDING, PLANNING, GRAPH_EXEC, SKILL_DRAFT, SKILL_TEST = "pending", "planning", "graph_exec", "skill_draft", "skill_test"
APPROVAL, REWORK, MODEL_WAIT = "approval", "rework", "model_wait"
COMPLETE, FAILED, STOPPED = "complete", "failed", "stopped"
STATES = (PENDING, PLANNING, GRAPH_EXEC, SKILL_DRAFT, SKILL_TEST, APPROVAL, REWORK, MODEL_WAIT, COMPLETE, FAILED,
          STOPPED)


@dataclass
class RunOptions:
    workspace: Path
    run_yes: bool = False
    resume_yes: bool = False
    ask: Callable[[str], bool] | None = None
    say: Callable[[str], None] = lambda _t: None               # a line for the person
    show: Callable[[str, str | None, float], None] = lambda _s, _n, _e: None   # live state/node/elapsed


@dataclass
class Outcome:
    status: str
    exit_code: int
    task: dict[str, Any]
    hints: list[str] = field(default_factory=list)


class Pause(Exception):
    """Raised inside a step: the task waits (approval, model) and the process ends with `hints`."""

    def __init__(self, reason: str, hints: list[str]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hints = hints


class Stop(Exception):
    """Raised inside a step: a stop was requested while the step waited."""


def new_task(task_id: str, prompt: str, config: HomeConfig, workspace: Path) -> dict[str, Any]:
    return {"version": STATE_VERSION, "id": task_id, "prompt": prompt, "status": PENDING, "created_at": utc_now(),
            "updated_at": utc_now(), "step_count": 0, "max_steps": int(config.limit("max_task_steps")),
            "timeout_seconds": float(config.limit("task_timeout_seconds")), "active_seconds": 0.0,
            "workspace": str(workspace), "paused": False, "pause_reason": None, "resume_status": None,
            "waiting_for_model": None, "graph": None, "plan_attempts": 0, "plan_errors": [], "replans": 0,
            "confirmed": False, "approvals": {}, "current_node": None, "error": None, "termination_reason": None,
            "transitions": []}
