"""Run a plan or a strict action list in a worker: the parent side of one run.

Pre-checks (syntax, lint) run here, so a bad plan never costs a worker. The worker is killed at
the wall-time limit, which is never past the caller's deadline; tool calls are audited as they
arrive, so a killed plan still leaves its trail. Every run is written to a record file.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.audit import AuditLog
from agent.clock import utc_now
from agent.errors import ALL_CODES, AgentError, PlanError, PlanRuntimeError, PlanTimeout
from agent.plans.commands import run_for_plan
from agent.plans.limits import PlanLimits
from agent.plans.lint import check_plan
from agent.plans.pool import POOL, Worker
from agent.plans.record import new_run_id, write_record
from agent.redact import Redactor
from agent.workspace import Artifact, Workspace

__all__ = ["PlanHost", "PlanOutcome", "run_plan", "run_actions", "run_request", "WORKER_AUDIT_EVENTS"]

_MAX_CONTEXT_FILES = 200
# Audit events a worker may ask the parent to write (from skills' I/O; agent/skills/sandbox.py).
WORKER_AUDIT_EVENTS = frozenset({"file_read", "file_write", "sandbox_violation", "skill_call", "skill_log",
                                 "skill_exec"})
_RECORD_OUTPUT_CAP = 64 * 1024


class PlanHost(Protocol):
    """Implemented by the agent runtime in the parent process."""

    def call_llm(self, prompt: str, opts: dict[str, Any]) -> str: ...
    def progress(self, message: str) -> None: ...
    def log(self, message: str) -> None: ...
    # Optional: `run_tests(timeout_s) -> tests payload` lets a plan call `tools.test()` (no served role does).


@dataclass
class PlanOutcome:
    """What a successful run produced."""

    result: Any
    output: str
    output_truncated: bool
    artifacts: list[Artifact]
    tool_calls: list[dict[str, Any]]
    record_path: str | None
    run_id: str
    usage: dict[str, Any] = field(default_factory=dict)


def _workspace_facts(workspace: Workspace) -> dict[str, Any]:
    """Read-only facts for `context.workspace`: the first files (bookkeeping dirs skipped)."""
    files: list[str] = []
    truncated = False
    for rel in workspace.iter_files():
        if len(files) >= _MAX_CONTEXT_FILES:
            truncated = True
            break
        files.append(rel)
    return {"files": files, "files_truncated": truncated}


def _error_from(payload: dict[str, Any]) -> PlanError:
    cls = ALL_CODES.get(str(payload.get("code")), PlanRuntimeError)
    if not issubclass(cls, PlanError):
        cls = PlanRuntimeError
    details = dict(payload.get("details") or {})
    message = str(payload.get("message", ""))
    if details.get("line") and "(line " not in message:
        message = f"{message} (line {details['line']})"
    return cls(message, **details)


class _Run:
    """State of one run on the parent side."""

    def __init__(self, kind: str, workspace: Workspace, limits: PlanLimits, host: PlanHost | None,
                 audit: AuditLog | None) -> None:
        self.kind = kind
        self.ws = workspace
        self.limits = limits
        self.host = host
        self.audit = audit
        self.redactor = audit.redactor if audit is not None else Redactor()
        self.run_id = new_run_id()
        self.started_at = utc_now()
        self.t0 = time.monotonic()
        self.calls: list[dict[str, Any]] = []
        self.artifacts: dict[str, Artifact] = {}
        self.done: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}
        self.events: list[dict[str, Any]] = []
        self.blocked_s = 0.0   # the agent's own waiting while the plan ran: not the plan's time
        self.wall = 0.0
        self.cap = float("inf")

    def deadline(self) -> float:
        return min(self.t0 + self.wall + self.blocked_s, self.cap)

    def _reply(self, worker: Worker, data: dict[str, Any]) -> None:
        worker.send({**data, "agent_blocked_s": round(self.blocked_s, 6)}, self.deadline())

    def _audit(self, event: str, **fields: Any) -> None:
        if self.audit is not None:
            self.audit.record(event, run_id=self.run_id, **fields)

    # -- worker conversation --------------------------------------------------------------------
    def execute(self, request: dict[str, Any], wall: float, command_deadline: float | None = None) -> None:
        """Run the request in a worker; the plan is charged for its own time only.

        Time the agent spends blocked on its own output (a progress line to an orchestrator that is
        not reading) moves the deadline on, never past the command's `command_deadline` (time.time()),
        and is passed to the worker with every reply so the plan's own clock leaves it out too."""
        self.wall = wall
        self.cap = self.t0 + (command_deadline - time.time()) if command_deadline is not None else float("inf")
        # CLOCK_MONOTONIC is shared by all processes: the worker stops itself (with the plan's
        # line) before this deadline even when it was spawned or confined late.
        request["hard_deadline_mono"] = self.t0 + wall
        worker, generation = POOL.acquire()
        killed = False
        try:
            worker.send(request, self.deadline())
            while True:
                msg = worker.recv(self.deadline())
                if msg is None:
                    self.done = self._worker_died(worker)
                    killed = True
                    return
                if msg.get("type") == "done":
                    self.done = msg
                    return
                self._handle(msg, worker)
        except TimeoutError:
            worker.kill()
            killed = True
            self.done = {"ok": False, "error": {"code": "plan_timeout", "details": {"wall_s": round(wall, 3)},
                                                "message": f"wall-time limit exceeded ({wall:.3g} s); worker killed"}}
        except (OSError, ValueError) as exc:
            worker.kill()
            killed = True
            self.done = {"ok": False, "error": {"code": "plan_runtime_error", "details": {},
                                                "message": f"plan worker channel failed: {exc}"}}
        finally:
            POOL.release(worker, generation, killed=killed)

    def _worker_died(self, worker: Worker) -> dict[str, Any]:
        worker.kill()
        rc = worker.proc.returncode
        if rc in (-9, -24):  # SIGKILL at the hard CPU limit, SIGXCPU at the soft one
            return {"ok": False, "error": {"code": "plan_timeout", "details": {"signal": -rc},
                                           "message": "plan worker hit its CPU-time limit"}}
        return {"ok": False, "error": {"code": "plan_runtime_error", "details": {"exit": rc},
                                       "message": f"plan worker exited unexpectedly (status {rc})"}}

    def _handle(self, msg: dict[str, Any], worker: Worker) -> None:
        kind = msg.get("type")
        if kind == "tool_call":
            self._tool_call(msg.get("record") or {}, msg.get("artifacts") or [])
        elif kind == "run":
            left = max(0.0, self.deadline() - time.monotonic() - 0.05)
            self._reply(worker, run_for_plan(str(msg.get("cmd", "")), root=str(self.ws.root), allow=self.limits.run_allow,
                                             timeout_s=min(_seconds(msg.get("timeout_s")), left)))
        elif kind == "test":
            left = max(0.0, self.deadline() - time.monotonic() - 0.05)
            self._reply(worker, self._run_tests(min(_seconds(msg.get("timeout_s")), left)))
        elif kind in ("progress", "log"):
            text = self.redactor.text(str(msg.get("message", "")))
            self.events.append({"type": kind, "message": text})
            if self.host is not None:
                started = time.monotonic()
                try:
                    getattr(self.host, kind)(text)
                except Exception as exc:  # the host's trouble must not end the plan
                    self._audit("plan_host_error", call=kind, error=repr(exc))
                self.blocked_s += time.monotonic() - started  # writing it out is the agent's time
        elif kind == "audit" and msg.get("event") in WORKER_AUDIT_EVENTS:
            raw = msg.get("fields")
            fields: dict[str, Any] = raw if isinstance(raw, dict) else {}
            self._audit(str(msg["event"]), **{str(k): v for k, v in fields.items() if k not in ("event", "run_id")})
        elif kind == "llm":
            self._reply(worker, self._call_llm(str(msg.get("prompt", "")), msg.get("opts") or {}))

    def _run_tests(self, timeout_s: float) -> dict[str, Any]:
        runner = getattr(self.host, "run_tests", None)
        if runner is None:
            return {"error": "no test command configured for this plan", "code": "not_configured"}
        try:
            return dict(runner(timeout_s))
        except AgentError as exc:
            return {"error": exc.message, "code": exc.code}

    def _call_llm(self, prompt: str, opts: dict[str, Any]) -> dict[str, Any]:
        if self.host is None:
            return {"error": "no model configured", "code": "model_not_configured"}
        try:
            return {"text": str(self.host.call_llm(prompt, opts))}
        except AgentError as exc:
            return {"error": exc.message, "code": exc.code}
        except Exception as exc:
            return {"error": f"model call failed ({type(exc).__name__})", "code": "model_error"}

    def _tool_call(self, record: dict[str, Any], artifacts: list[dict[str, Any]]) -> None:
        record["args"] = self.redactor.data(record.get("args"))
        self.calls.append(record)
        self.usage = record.get("usage") or self.usage
        for art in artifacts:
            artifact = Artifact(str(art["path"]), str(art["sha256"]), int(art["size"]))
            self.artifacts[artifact.path] = artifact  # last write wins, first position kept
        self._audit("plan_tool_call", tool=record.get("tool"), args=record.get("args"), ok=record.get("ok"),
                    error=record.get("error"), result_bytes=record.get("result_bytes"), ms=record.get("ms"))

    # -- outcome ---------------------------------------------------------------------------------
    def outcome_calls(self) -> list[dict[str, Any]]:
        out = []
        for c in self.calls:
            entry = {"tool": c.get("tool"), "args": c.get("args"), "ok": bool(c.get("ok"))}
            if not c.get("ok"):
                entry["error"] = c.get("error")
            entry.update(result_bytes=c.get("result_bytes", 0), ms=c.get("ms", 0))
            out.append(entry)
        return out

    def write_record(self, source: Any, context: Any, error: PlanError | None) -> str | None:
        done = self.done
        record = {
            "run_id": self.run_id, "kind": self.kind, "started_at": self.started_at, "finished_at": utc_now(),
            "ms": round((time.monotonic() - self.t0) * 1000, 3), "source": source, "context": context,
            "limits": self.limits.to_dict(),
            "usage": {**(done.get("usage") or self.usage), "instructions": done.get("instructions", 0)},
            "tool_calls": self.calls, "events": self.events,
            "artifacts": [a.to_dict() for a in self.artifacts.values()],
            "ok": error is None, "result": done.get("result") if error is None else None,
            "output": str(done.get("output", ""))[:_RECORD_OUTPUT_CAP],
            "output_truncated": bool(done.get("output_truncated")),
            "error": {"code": error.code, "message": error.message, **error.details} if error else None,
        }
        try:
            return write_record(self.ws, record, self.redactor)
        except (AgentError, OSError) as exc:
            self._audit("plan_record_failed", error=repr(exc))
            return None


def _seconds(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and value == value and value >= 0 else 0.0


def _wall(limits: PlanLimits, deadline: float | None) -> float:
    wall = float(limits.wall_s)
    if deadline is not None:
        wall = min(wall, deadline - time.time())
    if wall <= 0:
        raise PlanTimeout("the command deadline has already passed", wall_s=0)
    return wall


def _worker_sandbox(workspace: Workspace, limits: PlanLimits) -> dict[str, Any] | None:
    """The OS boundary the worker applies to itself (see `agent.sandbox.plan_worker`); promoted
    skills (read-only) are the one thing outside the workspace a plan's worker may read besides
    the interpreter."""
    from agent.sandbox.plan_worker import worker_policy

    extra = (os.path.realpath(limits.skills_home),) if limits.skills_home else ()
    policy = worker_policy(str(workspace.root), extra_read=extra)
    return None if policy is None else policy.to_dict()


def _finish(run: _Run, source: Any, context: Any, pre_error: PlanError | None = None) -> PlanOutcome:
    error = pre_error
    if error is None and not run.done.get("ok"):
        error = _error_from(run.done.get("error") or {"code": "plan_runtime_error", "message": "no result"})
    record = run.write_record(source, context, error)
    run._audit("plan_end", kind=run.kind, ok=error is None, code=error.code if error else None,
               tool_calls=len(run.calls), ms=round((time.monotonic() - run.t0) * 1000, 3))
    if error is not None:
        error.details.update(run_id=run.run_id, record=record)
        raise error
    return PlanOutcome(result=run.done.get("result"), output=str(run.done.get("output", "")),
                       output_truncated=bool(run.done.get("output_truncated")),
                       artifacts=list(run.artifacts.values()), tool_calls=run.outcome_calls(),
                       record_path=record, run_id=run.run_id,
                       usage={**(run.done.get("usage") or {}), "instructions": run.done.get("instructions", 0)})


def run_plan(source: str, context: dict[str, Any], *, workspace: Workspace, limits: PlanLimits | None = None,
             host: PlanHost | None = None, audit: AuditLog | None = None,
             deadline: float | None = None) -> PlanOutcome:
    """Check and run a Lua plan in a fresh worker; raises PlanInvalid, SandboxViolation, PlanTimeout, ...

    `deadline` is an absolute `time.time()`; the wall limit is min(limits.wall_s, deadline - now).
    """
    limits = limits or PlanLimits()
    run = _Run("lua", workspace, limits, host, audit)
    run._audit("plan_start", kind="lua", source_bytes=len(source.encode("utf-8", "replace")) if isinstance(source, str) else 0)
    try:
        check_plan(source)
        wall = _wall(limits, deadline)
    except PlanError as exc:
        return _finish(run, source, context, exc)
    ctx = dict(context or {})
    ctx.setdefault("workspace", _workspace_facts(workspace))
    ctx.pop("tools", None)
    run.execute({"kind": "plan", "source": source, "context": ctx, "limits": limits.to_dict(),
                 "wall_s": wall, "workspace": str(workspace.root), "run_id": run.run_id,
                 "secret_values": workspace.secret_values(), "sandbox": _worker_sandbox(workspace, limits)}, wall,
                deadline)
    return _finish(run, source, context)


def run_actions(actions: list[dict[str, Any]], *, workspace: Workspace, limits: PlanLimits | None = None,
                host: PlanHost | None = None, audit: AuditLog | None = None,
                deadline: float | None = None) -> PlanOutcome:
    """Execute a strict action list (from `parse_action_list`) through the same tools, in a worker.

    `result` is one entry per action: {"tool", "ok", "result"} or {"tool", "ok": false, "error", "code"}.
    """
    limits = limits or PlanLimits()
    run = _Run("actions", workspace, limits, host, audit)
    run._audit("plan_start", kind="actions", actions=len(actions))
    try:
        wall = _wall(limits, deadline)
    except PlanError as exc:
        return _finish(run, actions, None, exc)
    run.execute({"kind": "actions", "actions": actions, "limits": limits.to_dict(), "wall_s": wall,
                 "workspace": str(workspace.root), "run_id": run.run_id,
                 "secret_values": workspace.secret_values(), "sandbox": _worker_sandbox(workspace, limits)}, wall,
                deadline)
    return _finish(run, actions, None)


def run_request(kind: str, request: dict[str, Any], *, workspace: Workspace, limits: PlanLimits | None = None,
                host: PlanHost | None = None, audit: AuditLog | None = None, deadline: float | None = None,
                record_source: Any = None) -> PlanOutcome:
    """Run another kind of worker request (e.g. `skill_test`) with the same worker, limits, audit and record."""
    limits = limits or PlanLimits()
    run = _Run(kind, workspace, limits, host, audit)
    run._audit("plan_start", kind=kind)
    try:
        wall = _wall(limits, deadline)
    except PlanError as exc:
        return _finish(run, record_source, None, exc)
    run.execute({**request, "kind": kind, "limits": limits.to_dict(), "wall_s": wall,
                 "workspace": str(workspace.root), "run_id": run.run_id}, wall, deadline)
    return _finish(run, record_source, None)
