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
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from agent.errors import AgentError, ModelNotRunning, NoModelAvailable, TaskGraphInvalid
from agent.supervised.approvals import RUN_YES_SKIPS, Approvals
from agent.supervised.effects import EffectJournal
from agent.supervised.events import TaskAudit
from agent.supervised.graph import ready_nodes, skip_downstream, validate_graph
from agent.supervised.home import AgentHome, HomeConfig
from agent.supervised.models import ModelPicker
from agent.supervised.nodes import NodeExecutor, PickerClient, check_declared, error_text
from agent.supervised.paths import NodePaths
from agent.supervised.planner import graph_prompt, node_prompt, parse_and_validate
from agent.supervised.state import STATE_VERSION, TERMINAL, TaskFiles, save_current
from agent.workspace import Workspace

__all__ = ["Machine", "Outcome", "RunOptions", "new_task", "EXIT_COMPLETE", "EXIT_FAILED", "EXIT_PAUSED",
           "EXIT_STOPPED", "STATES"]

EXIT_COMPLETE, EXIT_FAILED, EXIT_PAUSED, EXIT_STOPPED = 0, 1, 3, 4
PENDING, PLANNING, GRAPH_EXEC, SKILL_DRAFT, SKILL_TEST = "pending", "planning", "graph_exec", "skill_draft", "skill_test"
APPROVAL, REWORK, MODEL_WAIT = "approval", "rework", "model_wait"
COMPLETE, FAILED, STOPPED = "complete", "failed", "stopped"
STATES = (PENDING, PLANNING, GRAPH_EXEC, SKILL_DRAFT, SKILL_TEST, APPROVAL, REWORK, MODEL_WAIT, COMPLETE, FAILED,
          STOPPED)
_MAX_TRANSITIONS_KEPT = 500


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


class _Pause(Exception):
    def __init__(self, reason: str, hints: list[str]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hints = hints


class _Stop(Exception):
    pass


def new_task(task_id: str, prompt: str, config: HomeConfig, workspace: Path) -> dict[str, Any]:
    return {"version": STATE_VERSION, "id": task_id, "prompt": prompt, "status": PENDING, "created_at": utc_now(),
            "updated_at": utc_now(), "step_count": 0, "max_steps": int(config.limit("max_task_steps")),
            "timeout_seconds": float(config.limit("task_timeout_seconds")), "active_seconds": 0.0,
            "workspace": str(workspace), "paused": False, "pause_reason": None, "resume_status": None,
            "waiting_for_model": None, "graph": None, "plan_attempts": 0, "plan_errors": [], "replans": 0,
            "confirmed": False, "approvals": {}, "current_node": None, "error": None, "termination_reason": None,
            "transitions": []}


class Machine:
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
            except _Pause as pause:
                self._log_step(before)
                return self._paused(pause)
            except _Stop:
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

    def _act(self, action: str, result: Any) -> None:
        self._step_actions.append({"action": action, "result": result})

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

    def _paused(self, pause: _Pause) -> Outcome:
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
        raise _Pause("approval", hints)

    def _pause_for_model(self, exc: ModelNotRunning, resume_status: str) -> None:
        model = str(exc.details.get("model"))
        cmd = str(exc.details.get("start_command"))
        self.to(MODEL_WAIT, waiting_for_model=model, start_command=cmd, resume_status=resume_status)
        raise _Pause("model_not_running", [f"model {model!r} is not running (luallm.auto_start is off).",
                                           f"start it with:   {cmd}", f"then resume with: {self._resume_cmd()}"])

    # -- PLANNING -----------------------------------------------------------------------------------
    def _skill_exists(self, name: str) -> bool:
        try:
            self.home.skills().load(name, "allowed")
        except AgentError:
            return False
        return True

    def _check_path(self, path: str, write: bool) -> None:
        located = self.paths.locate(path)
        located.workspace.resolve(located.rel, policy=located.policy, write=write)

    def _plan_once(self) -> None:
        limit = int(self.config.limit("max_plan_retries")) + 1
        self.task["plan_attempts"] += 1
        prompt = graph_prompt(self.task["prompt"], self.home.skills().names("allowed"), [], self.task["plan_errors"])
        try:
            reply = self.picker.complete(prompt, "planning")
        except ModelNotRunning as exc:
            self.task["plan_attempts"] -= 1
            self._pause_for_model(exc, PLANNING)
            return
        try:
            nodes = parse_and_validate(reply.text, skill_exists=self._skill_exists, check_path=self._check_path,
                                       max_retries=int(self.config.limit("max_node_retries")))
        except TaskGraphInvalid as exc:
            problems = list(exc.details.get("problems") or [exc.message])
            self.task["plan_errors"] = problems
            self.audit.record("graph_validation_failed", attempt=self.task["plan_attempts"], problems=problems)
            self._act("plan", {"ok": False, "problems": problems})
            self.opt.say(f"graph rejected (attempt {self.task['plan_attempts']}/{limit}): {problems[0]}")
            if self.task["plan_attempts"] >= limit:
                self.to(FAILED, error=f"no valid task graph after {limit} attempts: {'; '.join(problems[:3])}")
            return
        self.task["graph"] = {"nodes": nodes, "metadata": {"prompt": self.task["prompt"], "created_at": utc_now(),
                                                           "model": reply.model}}
        self.task["plan_errors"] = []
        self.audit.record("graph_generated", nodes=[{"id": n["id"], "action": n["action"],
                                                     "depends_on": n["depends_on"]} for n in nodes],
                          attempt=self.task["plan_attempts"])
        self._act("plan", {"ok": True, "nodes": len(nodes)})
        self.to(GRAPH_EXEC)

    # -- GRAPH_EXEC --------------------------------------------------------------------------------
    @property
    def nodes(self) -> list[dict[str, Any]]:
        graph = self.task["graph"] or {}
        nodes: list[dict[str, Any]] = graph.get("nodes") or []
        return nodes

    def _confirm(self) -> None:
        steps = "; ".join(f"{n['id']}: {n['action']}" + (f" ({n.get('skill_name')})" if n.get("skill_name") else "")
                          + (f" writes {', '.join(n['writes'])}" if n.get("writes") else "") for n in self.nodes)
        answer = self.approvals.need(self.task, "task_confirmation", "task", f"I plan to do: {steps}. Proceed?")
        if answer == "pending":
            self._pause_for_approval(GRAPH_EXEC)
        if answer == "denied":
            self.to(FAILED, error="task declined at confirmation")
            return
        self.task["confirmed"] = True

    def _graph_step(self) -> None:
        if not self.task["confirmed"]:
            self._confirm()
            if self.task["status"] != GRAPH_EXEC:
                return
        ready = ready_nodes(self.nodes)
        if not ready:
            failed = [n["id"] for n in self.nodes if n["status"] == "failed"]
            waiting = [n["id"] for n in self.nodes if n["status"] in ("pending", "running")]
            if failed:
                self.to(FAILED, error=self.task.get("error") or f"node(s) {', '.join(failed)} failed")
            elif waiting:
                self.to(FAILED, error=f"deadlock: no ready nodes but {', '.join(waiting)} never became ready")
            else:
                self.task["current_node"] = None
                self.to(COMPLETE)
            return
        self._run_node(ready[0])

    def _run_node(self, node: dict[str, Any]) -> None:
        self.task["current_node"] = node["id"]
        if node["status"] == "pending":
            node["status"] = "running"
            node["started_at"] = utc_now()
            self.audit.record("node_start", node_id=node["id"], action=node["action"],
                              skill_name=node.get("skill_name"), attempt=node["retries"] + 1)
            self.save()
            self.opt.show(GRAPH_EXEC, node["id"], self._active())
        t0 = time.monotonic()
        try:
            if node["action"] == "decision":
                self._decide(node)
            else:
                self._execute(node)
        finally:
            node["elapsed_s"] = round(float(node.get("elapsed_s") or 0.0) + time.monotonic() - t0, 3)

    def _approve(self, tier: str, key: str, summary: str, **details: Any) -> bool:
        answer = self.approvals.need(self.task, tier, key, summary, **details)
        if answer == "pending":
            self._pause_for_approval(GRAPH_EXEC)
        return answer == "approved"

    def _execute(self, node: dict[str, Any]) -> None:
        nid = node["id"]
        for p in node.get("reads") or []:
            if not self._approve("path_read", f"read:{nid}:{p}", f"node {nid} wants to read {p}", path=p):
                return self._fail_node(node, f"reading {p} was denied", final=True)
        for url in node.get("network") or []:
            if not self._approve("network_access", f"net:{nid}:{url}", f"node {nid} wants to fetch {url}", url=url):
                return self._fail_node(node, f"network access to {url} was denied", final=True)
        if node["action"] == "skill" and node.get("skill_source") == "draft":
            self.to(SKILL_DRAFT, resume_status=GRAPH_EXEC)
            return None
        if not node.get("computed"):
            deadline = time.time() + max(0.5, float(self.task["timeout_seconds"]) - self._active())
            self._in_plan = node["action"] in ("plan", "skill")
            try:
                result, files = self.executor.compute(node, self.nodes, deadline)
                check_declared(node, files)
            except ModelNotRunning as exc:
                node["status"] = "pending"
                self._pause_for_model(exc, GRAPH_EXEC)
                return None
            except NoModelAvailable:
                raise  # no model can do any node: the task fails, retrying the node cannot help
            except AgentError as exc:
                if self._stop.is_set():
                    raise _Stop() from None
                return self._fail_node(node, error_text(exc))
            finally:
                self._in_plan = False
            for path, data in files.items():
                self.journal.stage(node, path, data)
            node.update(result=result, computed=True)
            self._act(f"compute node {nid}", {"ok": True, "files": sorted(files)})
            self.save()  # the journal: from here on the node is never recomputed
        for effect in node["effects"]:
            if effect["status"] == "applied":
                continue
            staged = self.files.dir / effect["staged"]
            if not self._approve("path_write", f"write:{nid}:{effect['path']}:{effect['sha256']}",
                                 f"node {nid} wants to write {effect['path']} ({effect['bytes']} bytes, sha256 "
                                 f"{effect['sha256'][:12]}…; review the staged copy {staged})",
                                 path=effect["path"], sha256=effect["sha256"], staged=str(staged)):
                return self._fail_node(node, f"writing {effect['path']} was denied", final=True)
            current = self.journal.current_digest(effect["path"])
            if current is not None and current != effect["sha256"]:
                if not self._approve("destructive_overwrite", f"overwrite:{nid}:{effect['path']}:{current}",
                                     f"{effect['path']} already exists (sha256 {current[:12]}…); node {nid} would "
                                     "replace it", path=effect["path"], existing_sha256=current):
                    return self._fail_node(node, f"overwriting {effect['path']} was denied", final=True)
            outcome = self.journal.apply(effect)
            self._act(f"write {effect['path']}", outcome)
            self.save()
        node["status"] = "complete"
        self.audit.record("node_complete", node_id=nid, action=node["action"], retries=node["retries"])
        self.opt.say(f"node {nid} complete")
        return None

    def _decide(self, node: dict[str, Any]) -> None:
        nid = node["id"]
        if node.get("decision") is None:
            try:
                # Asked once: an ambiguous answer is saved, so a resume goes straight to the person.
                verdict = None if node.get("ambiguous") else self.executor.decide(node, self.nodes)
            except ModelNotRunning as exc:
                self._pause_for_model(exc, GRAPH_EXEC)
                return
            except NoModelAvailable:
                raise
            except AgentError as exc:
                self._fail_node(node, error_text(exc))
                return
            if verdict is None:
                node["ambiguous"] = True
                answer = self.approvals.need(self.task, "decision", f"decision:{nid}",
                                             f"decision {nid} is ambiguous: is '{node['condition']}' true?")
                if answer == "pending":
                    self._pause_for_approval(GRAPH_EXEC)
                verdict = answer == "approved"
            node["decision"] = verdict
        chosen, other = (node["if_true"], node["if_false"]) if node["decision"] else (node["if_false"],
                                                                                      node["if_true"])
        for n in self.nodes:
            if n["id"] == other and n["status"] == "pending":
                n.update(status="skipped", error=f"decision {nid} chose {chosen}")
                skip_downstream(self.nodes, other, f"decision {nid} chose {chosen}")
        node.update(status="complete", result=bool(node["decision"]))
        self.audit.record("node_complete", node_id=nid, action="decision", decision=bool(node["decision"]),
                          chosen=chosen)

    def _fail_node(self, node: dict[str, Any], error: str, *, final: bool = False) -> None:
        nid = node["id"]
        node["retries"] += 1
        node["error"] = error
        self._act(f"node {nid}", {"ok": False, "error": error})
        if not final and node["retries"] < node["max_retries"]:
            node["status"] = "pending"
            wait = min(float(self.config.limit("llm_backoff_base_seconds")) * 4 ** (node["retries"] - 1),
                       float(self.config.limit("llm_backoff_max_seconds")))
            self.audit.record("node_retry", node_id=nid, attempt=node["retries"], error=error, wait_s=wait)
            self.opt.say(f"node {nid} failed ({error}); retry {node['retries']} in {wait:g} s")
            self.save()
            if self._stop.wait(wait):
                raise _Stop()
            return
        self.audit.record("node_failed_final", node_id=nid, error=error, retries=node["retries"])
        if not final and self._replan_node(node, error):
            return
        node["status"] = "failed"
        skipped = skip_downstream(self.nodes, nid, f"upstream node {nid} failed")
        self.task["error"] = f"node {nid} failed after {node['retries']} attempt(s): {error}"
        self.opt.say(f"node {nid} failed: {error}" + (f"; skipped {', '.join(skipped)}" if skipped else ""))

    def _replan_node(self, node: dict[str, Any], error: str) -> bool:
        """§5.4: ask for an alternative to a node that exhausted its retries (bounded by max_plan_retries)."""
        if self.task["replans"] >= int(self.config.limit("max_plan_retries")):
            return False
        self.task["replans"] += 1
        others = [n["id"] for n in self.nodes if n["id"] != node["id"]]
        try:
            reply = self.picker.complete(node_prompt(self.task["prompt"], node, error, others), "planning")
            from agent.supervised.graph import parse_graph

            data = parse_graph(reply.text)
            raw = data.get("nodes")
            if not isinstance(raw, list) or len(raw) != 1 or not isinstance(raw[0], dict):
                raise TaskGraphInvalid("the replacement must be exactly one node", problems=["not exactly one node"])
            replacement = {**raw[0], "id": node["id"], "depends_on": node["depends_on"]}
            trial = [replacement if n["id"] == node["id"] else
                     {k: v for k, v in n.items() if k in ("id", "action", "depends_on", "prompt_template", "source",
                                                          "skill_name", "skill_args", "skill_source", "skill_spec",
                                                          "condition", "if_true", "if_false", "reads", "writes",
                                                          "network", "model")} for n in self.nodes]
            fresh = validate_graph({"nodes": trial}, skill_exists=self._skill_exists, check_path=self._check_path,
                                   max_retries=int(self.config.limit("max_node_retries")))
        except ModelNotRunning:
            return False
        except NoModelAvailable:
            raise
        except AgentError as exc:
            self.audit.record("graph_validation_failed", replan_of=node["id"], problems=exc.details.get("problems")
                              or [exc.message])
            return False
        new = next(n for n in fresh if n["id"] == node["id"])
        node.clear()
        node.update(new)
        self.audit.record("graph_generated", replan_of=new["id"], action=new["action"])
        self.opt.say(f"node {new['id']} re-planned as {new['action']}")
        return True

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
        from agent.supervised.state import read_json

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
            raise _Pause("model_not_running", [f"cannot ask luallm about {model!r}: {exc.message}",
                                               f"then resume with: {self._resume_cmd()}"]) from None
        if not running:
            raise _Pause("model_not_running", [f"model {model!r} is still not running.",
                                               f"start it with:   {self.task.get('start_command')}",
                                               f"then resume with: {self._resume_cmd()}"])
        self.audit.record("model_ready", model=model)
        self.to(str(self.task.get("resume_status") or GRAPH_EXEC), waiting_for_model=None, paused=False)
