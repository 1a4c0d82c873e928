"""Executing one task-graph node's *computation* (its file writes go through `effects`).

Each executor returns `(result, files)`: the value later nodes see as `{node_N_result}` and the
files the node wants written (`{path: bytes}`), which must all be declared in the node's `writes`.
Plans and skills run in the Lua sandbox worker with read-only tools, so nothing a node computes
touches the workspace before its writes are staged, approved and applied.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from agent.errors import AgentError, InvalidModelResponse, PlanRuntimeError
from agent.models.base import ModelReply, ModelRequest
from agent.supervised.events import TaskAudit
from agent.supervised.graph import render_template
from agent.supervised.home import AgentHome, HomeConfig
from agent.supervised.models import ModelPicker
from agent.workspace import Workspace

__all__ = ["NodeExecutor", "PickerClient"]

Computed = tuple[Any, dict[str, bytes]]


class PickerClient:
    """A `ModelClient` over the picker, for code that wants one (the skill lifecycle)."""

    def __init__(self, picker: ModelPicker, task_type: str) -> None:
        self.picker = picker
        self.task_type = task_type

    def complete(self, request: ModelRequest) -> ModelReply:
        prompt = "\n\n".join(m["content"] for m in request.messages)
        return self.picker.complete(prompt, self.task_type, max_tokens=request.max_tokens)

    def close(self) -> None:
        return None


class _Host:
    """PlanHost: nested model calls through the picker, progress to the person, logs to the audit."""

    def __init__(self, picker: ModelPicker, audit: TaskAudit, progress: Callable[[str], None]) -> None:
        self.picker = picker
        self.audit = audit
        self._progress = progress

    def call_llm(self, prompt: str, opts: dict[str, Any]) -> str:
        return self.picker.complete(prompt, "simple_transform").text

    def progress(self, message: str) -> None:
        self._progress(message)

    def log(self, message: str) -> None:
        self.audit.record("plan_log", message=message[:2000])


class NodeExecutor:
    def __init__(self, home: AgentHome, config: HomeConfig, workspace: Workspace, picker: ModelPicker,
                 audit: TaskAudit, progress: Callable[[str], None]) -> None:
        self.home = home
        self.config = config
        self.workspace = workspace
        self.picker = picker
        self.audit = audit
        self.progress = progress

    def compute(self, node: dict[str, Any], nodes: list[dict[str, Any]], deadline: float) -> Computed:
        action = node["action"]
        if action == "llm_call":
            return self._llm_call(node, nodes)
        if action == "plan":
            return self._plan(node, str(node["source"]), {"args": node.get("args") or {}}, deadline)
        if action == "skill":
            name = str(node["skill_name"])
            source = f"function run(ctx)\n  return skills.{name}(ctx.args)\nend\n"
            return self._plan(node, source, {"args": node.get("skill_args") or {}}, deadline, skills=True)
        raise PlanRuntimeError(f"node {node['id']}: no executor for action {action!r}")

    def _budget(self) -> int:
        return int(self.config.limit("prompt_budget_bytes"))

    def _llm_call(self, node: dict[str, Any], nodes: list[dict[str, Any]]) -> Computed:
        prompt = render_template(str(node["prompt_template"]), nodes, self._budget())
        reply = self.picker.complete(prompt, str(node.get("task_type") or "simple_transform"),
                                     override=node.get("model"))
        text = reply.text
        files = {str(p): text.encode() for p in node.get("writes") or []}
        return text, files

    def decide(self, node: dict[str, Any], nodes: list[dict[str, Any]]) -> bool | None:
        """Evaluate a decision's condition against earlier results: True, False, or None (ambiguous)."""
        condition = render_template(str(node["condition"]), nodes, self._budget())
        earlier = {n["id"]: n.get("result") for n in nodes if n["status"] == "complete"}
        prompt = (f"Decide whether this condition holds, using the results of earlier steps.\n\nCondition: {condition}"
                  f"\n\nEarlier results (JSON): {json.dumps(earlier, default=str)[: self._budget()]}\n\n"
                  "Answer with exactly one word: true or false. Answer unsure if the results do not tell.")
        word = self.picker.complete(prompt, "simple_transform").text.strip().strip(".").lower()
        return True if word == "true" else False if word == "false" else None

    def _plan(self, node: dict[str, Any], source: str, context: dict[str, Any], deadline: float, *,
              skills: bool = False) -> Computed:
        from agent.plans.limits import PlanLimits
        from agent.plans.runner import run_plan
        from agent.plans.tools import READ_ONLY_TOOLS

        wall = min(float(self.config.limit("skill_exec_timeout_seconds")), max(0.5, deadline - time.time()))
        limits = PlanLimits(wall_s=wall, memory_bytes=int(self.config.limit("skill_memory_limit_mb")) * 1024 * 1024,
                            tools=READ_ONLY_TOOLS, skills_home=str(self.home.root) if skills else None)
        outcome = run_plan(source, context, workspace=self.workspace, limits=limits,
                           host=_Host(self.picker, self.audit, self.progress), audit=self.audit, deadline=deadline)
        result = outcome.result
        files: dict[str, bytes] = {}
        if isinstance(result, dict) and isinstance(result.get("files"), dict):
            for path, text in result["files"].items():
                if not isinstance(text, str):
                    raise PlanRuntimeError(f"node {node['id']}: files[{path!r}] must be a string")
                files[str(path)] = text.encode()
            result = {k: v for k, v in result.items() if k != "files"} or {"files": sorted(files)}
        return result, files


def check_declared(node: dict[str, Any], files: dict[str, bytes]) -> None:
    """Every file a node produced must be one it declared in `writes` (declared = what was approved)."""
    declared = set(node.get("writes") or [])
    extra = sorted(set(files) - declared)
    if extra:
        raise InvalidModelResponse(f"node {node['id']} produced undeclared files {extra}; declare them in `writes`",
                                   undeclared=extra)


def error_text(exc: BaseException) -> str:
    return exc.message if isinstance(exc, AgentError) else f"{type(exc).__name__}: {exc}"
