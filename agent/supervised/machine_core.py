"""The supervised task's record as the machine keeps it: saved after every change, transitions
audited, and the ways a run ends (finished, stopped, paused with the command that resumes it).

The base of the state machine (`machine.Machine`): the steps (`graph_steps`, `machine`) change the
task only through `to`, `save` and the pauses here, so that every change is on disk at once.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from agent.errors import ModelNotRunning
from agent.supervised.approvals import RUN_YES_SKIPS, Approvals
from agent.supervised.effects import EffectJournal
from agent.supervised.events import TaskAudit
from agent.supervised.home import AgentHome, HomeConfig
from agent.supervised.models import ModelPicker
from agent.supervised.nodes import NodeExecutor
from agent.supervised.paths import NodePaths
from agent.supervised.state import TERMINAL, TaskFiles, save_current
from agent.supervised.task_states import (
    APPROVAL,
    COMPLETE,
    EXIT_COMPLETE,
    EXIT_FAILED,
    EXIT_PAUSED,
    EXIT_STOPPED,
    MODEL_WAIT,
    STOPPED,
    Outcome,
    Pause,
    RunOptions,
)
from agent.workspace import Workspace

__all__ = ["MachineCore"]

_MAX_TRANSITIONS_KEPT = 500


class MachineCore:
    """A task's record and the state around one run of it; every change goes through `to` and `save`."""

    def __init__(self, home: AgentHome, config: HomeConfig, task: dict[str, Any], options: RunOptions,
                 audit: TaskAudit, picker: ModelPicker) -> None:
        self.home = home
        self.config = config
        self.task = task
        self.opt = options
        self.audit = audit
        self.picker = picker
        self.files = TaskFiles(home, task["id"])
        ws = Path(task["workspace"])
        self.paths = NodePaths(ws, tuple(config.allowed_paths), tuple(config.blocked_paths),
                               tuple(home.protected()))
        self.journal = EffectJournal(self.files, self.paths, audit)
        self.approvals = Approvals(home, config, audit, ask=options.ask, run_yes=options.run_yes,
                                   resume_yes=options.resume_yes)
        self.executor = NodeExecutor(home, config, Workspace(ws), picker, audit, options.say)
        self._t0 = time.monotonic()
        self._active_base = float(task.get("active_seconds") or 0.0)
        self._stop = threading.Event()
        self._in_plan = False
        self._done = threading.Event()
        self._step_actions: list[dict[str, Any]] = []

    # -- persistence -----------------------------------------------------------------------------
    def _active(self) -> float:
        return self._active_base + (time.monotonic() - self._t0)

    def _harness_status(self) -> str:
        status = str(self.task["status"])
        if status in TERMINAL:
            return status
        return "paused" if self.task.get("paused") else "running"

    def save(self) -> None:
        self.task["active_seconds"] = round(self._active(), 3)
        save_current(self.home, self.task)
        on_disk = self.files.write_state(self._harness_status(), self.task["step_count"], self.task["created_at"],
                                         machine_state=self.task["status"],
                                         termination_reason=self.task.get("termination_reason"),
                                         models_tried=self.task.get("models_tried"))
        if on_disk == "stopped" and self.task["status"] not in TERMINAL:
            self._stop.set()
        self.files.heartbeat(self.task["step_count"], self.task["status"])

    def to(self, new: str, **fields: Any) -> None:
        old = self.task["status"]
        self.task["status"] = new
        self.task.update(fields)
        self.task["transitions"] = [*self.task["transitions"], {"from": old, "to": new, "step":
                                    self.task["step_count"], "ts": utc_now()}][-_MAX_TRANSITIONS_KEPT:]
        self.audit.record("state_transition", from_state=old, to_state=new, step=self.task["step_count"],
                          node=self.task.get("current_node"))
        self.save()
        self.opt.show(new, self.task.get("current_node"), self._active())

    def _act(self, action: str, result: Any) -> None:
        self._step_actions.append({"action": action, "result": result})

    @property
    def nodes(self) -> list[dict[str, Any]]:
        graph = self.task["graph"] or {}
        nodes: list[dict[str, Any]] = graph.get("nodes") or []
        return nodes

    # -- outcomes ---------------------------------------------------------------------------------
    def _finish(self) -> Outcome:
        status = self.task["status"]
        self.audit.record("task_end", id=self.task["id"], status=status, error=self.task.get("error"),
                          termination_reason=self.task.get("termination_reason"),
                          models_tried=self.task.get("models_tried"))
        self.save()
        return Outcome(status, EXIT_COMPLETE if status == COMPLETE else EXIT_STOPPED if status == STOPPED
                       else EXIT_FAILED, self.task)

    def _stopped(self) -> Outcome:
        if self.task["status"] not in TERMINAL:
            self.to(STOPPED, termination_reason="external_stop", paused=False)
        return self._finish()

    def _paused(self, pause: Pause) -> Outcome:
        self.task.update(paused=True, pause_reason=pause.reason)
        self.audit.record("task_paused", id=self.task["id"], reason=pause.reason,
                          model=self.task.get("waiting_for_model"))
        self.save()
        return Outcome(self.task["status"], EXIT_PAUSED, self.task, pause.hints)

    def _resume_cmd(self, extra: str = "") -> str:
        return f"luallm-agent run --resume --home {self.home.root}{extra}"

    def _pause_for_approval(self, resume_status: str) -> None:
        if self.task["status"] != APPROVAL:
            self.to(APPROVAL, resume_status=resume_status)
        hints = ["waiting for approval:"]
        pending = Approvals.pending(self.task)
        for e in pending:
            hints.append(f"  - [{e['tier']}] {e['summary']}")
            hints.append(f"    id {Path(e['file']).stem}  (pending file: {e['file']})")
        hints.append(f"answer on a terminal with: {self._resume_cmd()}")
        if any(e["tier"] not in ("skill_promotion",) for e in pending):
            hints.append(f"or answer one by id: luallm-agent approvals approve ID --home {self.home.root} "
                         f"(or reject ID), then: {self._resume_cmd()}")
        if any(e["tier"] in RUN_YES_SKIPS and e["mode"] == "prompt" for e in pending):
            hints.append(f"or approve the confirmation and reads above with: {self._resume_cmd(' --yes')} "
                         "(--yes never approves a write, an overwrite or network access)")
        raise Pause("approval", hints)

    def _pause_for_model(self, exc: ModelNotRunning, resume_status: str) -> None:
        model = str(exc.details.get("model"))
        cmd = str(exc.details.get("start_command"))
        self.to(MODEL_WAIT, waiting_for_model=model, start_command=cmd, resume_status=resume_status)
        raise Pause("model_not_running", [f"model {model!r} is not running (luallm.auto_start is off).",
                                          f"start it with:   {cmd}", f"then resume with: {self._resume_cmd()}"])
