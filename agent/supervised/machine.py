"""The supervised task state machine (seed 000 §6) with the harness rules of seed 002.

    PENDING → PLANNING → GRAPH_EXEC ⇄ SKILL_DRAFT / APPROVAL / MODEL_WAIT → COMPLETE | FAILED | STOPPED

One loop iteration is one *step*: it reads the stop signal, checks the step budget and the
timeout, does one unit of work (one planning attempt, one node, one decision, ...), and saves:
`state/current_task.json`, then `tasks/<id>/state.json`, `heartbeat.json` and one line of
`actions.jsonl`. Every state change is audited (`state_transition`) and saved at once. Pauses
(APPROVAL, MODEL_WAIT) end the process with `EXIT_PAUSED` and print how to resume.

Whatever fails once the task exists ends it FAILED, never half-way: every candidate model failing
(`termination_reason: models_failed`, with `models_tried`) or any other error
(`fatal_error`) is saved to both state files and audited `task_end`, so the next `run` starts.

This module holds the loop and the steps of the pause states (SKILL_DRAFT, APPROVAL, MODEL_WAIT);
the PLANNING and GRAPH_EXEC steps are in `graph_steps`, the task record, its saving and the ways a
run ends in `machine_core`, the states themselves in `task_states`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from agent.errors import AgentError, ModelNotRunning, NoModelAvailable
from agent.supervised.graph_steps import GraphSteps
from agent.supervised.nodes import PickerClient, error_text
from agent.supervised.state import TERMINAL, read_json
from agent.supervised.task_states import (
    APPROVAL,
    FAILED,
    GRAPH_EXEC,
    MODEL_WAIT,
    PENDING,
    PLANNING,
    SKILL_DRAFT,
    Outcome,
    Pause,
    Stop,
)

__all__ = ["Machine"]


class Machine(GraphSteps):
    """The supervised task state machine: `run` steps the task until it ends or pauses."""

    # -- watcher: stop signal within a step, heartbeat while a node runs -----------------------------
    def _watch(self) -> None:
        beat = 0.0
        while not self._done.wait(0.2):
            if self.files.stop_requested():
                self._stop.set()
                if self._in_plan:
                    from agent.plans.pool import shutdown_workers

                    shutdown_workers()  # kills the running plan's worker: honoured within the plan
            beat += 0.2
            if beat >= 2.0:
                beat = 0.0
                try:
                    self.files.heartbeat(self.task["step_count"], f"{self.task['status']}:"
                                         f"{self.task.get('current_node') or '-'}")
                except OSError:
                    pass

    # -- the loop ---------------------------------------------------------------------------------
    def run(self, *, resumed: bool) -> Outcome:
        self.files.create({"task_id": self.task["id"], "prompt": self.task["prompt"], "created_at":
                           self.task["created_at"], "constraints": {"max_iterations": self.task["max_steps"],
                           "timeout_seconds": self.task["timeout_seconds"], "allowed_paths":
                           [self.task["workspace"], *self.config.allowed_paths]}})
        if self.files.stop_requested():
            return self._stopped()
        if resumed:
            self.audit.record("task_resumed", status=self.task["status"], step=self.task["step_count"])
        else:
            self.audit.record("task_start", id=self.task["id"], prompt=self.task["prompt"])
        self.task.update(paused=False)
        self.save()
        watcher = threading.Thread(target=self._watch, daemon=True)
        watcher.start()
        try:
            return self._loop()
        except NoModelAvailable as exc:
            return self._fail_task("models_failed", exc.message)
        except AgentError as exc:
            return self._fail_task("fatal_error", exc.message)
        except Exception as exc:  # a bug must still end the task, with its traceback on record
            self.audit.exception("internal_error", exc)
            return self._fail_task("fatal_error", f"internal error: {type(exc).__name__}: {exc}")
        finally:
            self._done.set()
            watcher.join(timeout=2)

    def _fail_task(self, reason: str, error: str) -> Outcome:
        """End the task FAILED from wherever it was (pauses and in-flight nodes included)."""
        tried = self.picker.tried()
        if tried:
            self.task["models_tried"] = tried
        self.opt.say(f"FAILED: {error}")
        if self.task["status"] not in TERMINAL:
            self.to(FAILED, error=error, termination_reason=reason, paused=False, pause_reason=None)
        return self._finish()

    def _loop(self) -> Outcome:
        while self.task["status"] not in TERMINAL:
            if self._stop.is_set() or self.files.stop_requested():
                return self._stopped()
            if self._active() > float(self.task["timeout_seconds"]):
                self.audit.record("task_timeout", timeout_seconds=self.task["timeout_seconds"])
                self.to(FAILED, error=f"timeout: active for more than {self.task['timeout_seconds']} s",
                        termination_reason="timeout")
                break
            self.task["step_count"] += 1
            if self.task["step_count"] > self.task["max_steps"]:
                self.audit.record("task_budget_exceeded", id=self.task["id"], max_steps=self.task["max_steps"])
                self.to(FAILED, error=f"exceeded max step budget ({self.task['max_steps']})",
                        termination_reason="max_iterations")
                break
            before = self.task["status"]
            self.picker.replies = []
            self._step_actions = []
            try:
                self._step()
            except Pause as pause:
                self._log_step(before)
                return self._paused(pause)
            except Stop:
                self._log_step(before)
                return self._stopped()
            self.save()
            self._log_step(before)
        return self._finish()

    def _log_step(self, state: str) -> None:
        self.files.append_action({"iteration": self.task["step_count"], "state": state,
                                  "node": self.task.get("current_node"), "llm_response": self.picker.replies,
                                  "actions": [a["action"] for a in self._step_actions],
                                  "results": [a.get("result") for a in self._step_actions]})

    def _step(self) -> None:
        status = self.task["status"]
        if status == PENDING:
            self.to(PLANNING)
        elif status == PLANNING:
            self._plan_once()
        elif status == GRAPH_EXEC:
            self._graph_step()
        elif status == SKILL_DRAFT:
            self._draft_skill()
        elif status == APPROVAL:
            self._recheck_approval()
        elif status == MODEL_WAIT:
            self._recheck_model()
        else:  # SKILL_TEST / REWORK happen inside the skill lifecycle's draft call
            self.to(GRAPH_EXEC)

    # -- SKILL_DRAFT / APPROVAL / MODEL_WAIT -------------------------------------------------------
    def _draft_skill(self) -> None:
        from agent.skills.lifecycle import SkillLifecycle

        node = next(n for n in self.nodes if n["id"] == self.task["current_node"])
        life = SkillLifecycle(self.home.skills(), model=PickerClient(self.picker, "skill_generation"),
                              audit=self.audit)
        try:
            outcome = life.draft(str(node["skill_name"]), str(node["skill_spec"]))
        except ModelNotRunning as exc:
            self._pause_for_model(exc, SKILL_DRAFT)
            return
        except NoModelAvailable:
            raise
        except AgentError as exc:
            self.to(GRAPH_EXEC)
            self._fail_node(node, error_text(exc), final=True)
            return
        if outcome.status != "approval_requested" or outcome.approval_path is None:
            self.to(GRAPH_EXEC)
            self._fail_node(node, f"draft of skill {node['skill_name']} failed its tests after {outcome.attempts} "
                                  "attempt(s)", final=True)
            return
        node["skill_approval"] = str(outcome.approval_path)
        self.task["approvals"][f"skill:{node['id']}"] = {
            "tier": "skill_promotion", "status": "pending", "mode": "manual", "file": str(outcome.approval_path),
            "summary": f"promote skill {node['skill_name']} (tests pass; review it, then run "
                       f"`luallm-agent skills resume` for the cp/chmod commands)", "requested_at": utc_now()}
        self._pause_for_approval(GRAPH_EXEC)

    def _recheck_skill(self, entry: dict[str, Any], node: dict[str, Any]) -> None:
        from agent.approval_archive import locate
        from agent.skills.lifecycle import SkillLifecycle

        life = SkillLifecycle(self.home.skills(), audit=self.audit)
        # `skills resume` may have answered it already, moving it to state/approvals/.
        path = locate(Path(entry["file"])) or Path(entry["file"])
        try:
            approval = read_json(path)
        except (OSError, ValueError):
            entry["status"] = "denied"
            return
        if approval.get("status") == "approved" and path.parent.name == "approvals":
            entry["status"] = "approved"
            node["skill_source"] = "allowed"
            return
        if approval.get("status") == "rejected":
            entry["status"] = "denied"
        elif life.promoted(approval) and life.validate_promoted(path, approval).ok:
            entry["status"] = "approved"
            node["skill_source"] = "allowed"

    def _recheck_approval(self) -> None:
        for key, entry in list((self.task.get("approvals") or {}).items()):
            if entry["status"] == "pending" and entry["tier"] == "skill_promotion":
                node = next((n for n in self.nodes if n["id"] == key.split(":", 1)[1]), None)
                if node is not None:
                    self._recheck_skill(entry, node)
                if entry["status"] == "pending":
                    self._pause_for_approval(str(self.task.get("resume_status") or GRAPH_EXEC))
                if entry["status"] == "denied" and node is not None:
                    self.to(GRAPH_EXEC)
                    self._fail_node(node, f"promotion of skill {node.get('skill_name')} was rejected", final=True)
                    return
        # Other tiers are asked again where they arose (a terminal, --resume --yes, or the file's answer).
        self.to(str(self.task.get("resume_status") or GRAPH_EXEC), paused=False)

    def _recheck_model(self) -> None:
        model = str(self.task.get("waiting_for_model"))
        try:
            running = self.picker.check_running(model)
        except AgentError as exc:
            raise Pause("model_not_running", [f"cannot ask luallm about {model!r}: {exc.message}",
                                              f"then resume with: {self._resume_cmd()}"]) from None
        if not running:
            raise Pause("model_not_running", [f"model {model!r} is still not running.",
                                              f"start it with:   {self.task.get('start_command')}",
                                              f"then resume with: {self._resume_cmd()}"])
        self.audit.record("model_ready", model=model)
        self.to(str(self.task.get("resume_status") or GRAPH_EXEC), waiting_for_model=None, paused=False)
