"""The PLANNING and GRAPH_EXEC steps of the supervised machine: one unit of work per step.

Planning asks for a task graph until one validates; executing confirms the plan once, then runs
the next ready node: computes it (once: its result and staged files are journaled), asks for each
read, fetch, write and overwrite, applies the writes, takes decisions, and retries, re-plans or
fails a node that did not work.
"""

from __future__ import annotations

import time
from typing import Any

from agent.clock import utc_now
from agent.errors import AgentError, ModelNotRunning, NoModelAvailable, TaskGraphInvalid
from agent.supervised.graph import parse_graph, ready_nodes, skip_downstream, validate_graph
from agent.supervised.machine_core import MachineCore
from agent.supervised.nodes import check_declared, error_text
from agent.supervised.planner import graph_prompt, node_prompt, parse_and_validate
from agent.supervised.task_states import COMPLETE, FAILED, GRAPH_EXEC, PLANNING, SKILL_DRAFT, Stop

__all__ = ["GraphSteps"]


class GraphSteps(MachineCore):
    """The steps of PLANNING and GRAPH_EXEC, on the task record of `MachineCore`."""

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
                    raise Stop() from None
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
                raise Stop()
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
