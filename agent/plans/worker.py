"""The plan worker: a child process that serves exactly one plan (or action list), then exits.

Started by `agent.plans.pool` as `python -m agent.plans.worker` and kept warm (lupa imported)
until a request arrives on stdin. Frames go to the parent on the original stdout pipe; fd 1 is
then pointed at stderr so nothing else (a C library, a stray print) can corrupt the protocol.
Resource limits and the OS boundary (`agent.sandbox`: Landlock read-only outside the workspace,
no exec, no sockets) are applied once the request says how large and where; the worker dies by
SIGIO the moment the agent's end of its lifeline closes (`agent.sandbox.lifeline`).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any, BinaryIO

import orjson

from agent.errors import AgentError
from agent.plans.limits import PlanLimits
from agent.plans.protocol import encode
from agent.plans.sandbox import PlanFailure, PlanRun, execute_plan
from agent.plans.tools import ToolBox, ToolError, ToolFatal, canonical_tool
from agent.sandbox.confine import confine_worker  # imported while warm: confining is then ~1 ms
from agent.sandbox.lifeline import ENV_FD, arm_sigio
from agent.sandbox.policy import Policy
from agent.workspace import Workspace

_NOTICEABLE_WAIT_S = 0.05  # a write that took longer found the pipe full

__all__ = ["main", "apply_rlimits", "soft_wall"]


def soft_wall(wall_s: float) -> float:
    """Seconds after which the plan stops itself (with its line) before the parent's hard kill."""
    return max(0.0, wall_s - min(0.25, wall_s * 0.1))


def _vm_size() -> int:
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 512 * 1024 * 1024


def apply_rlimits(limits: PlanLimits, wall_s: float) -> None:
    """CPU, address space, open files, file size and no core dumps; lowered only, never raised.

    Commands started by `tools.run` inherit them, which bounds them too.
    """
    import resource

    def lower(res: int, soft: int, hard: int | None = None) -> None:
        try:
            cur_soft, cur_hard = resource.getrlimit(res)
            hard = soft if hard is None else hard
            if cur_hard != resource.RLIM_INFINITY:
                hard = min(hard, cur_hard)
            resource.setrlimit(res, (min(soft, hard), hard))
        except (ValueError, OSError):
            pass  # a container may forbid it; the parent's kill still bounds the worker

    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(usage.ru_utime + usage.ru_stime + wall_s) + 2
    lower(resource.RLIMIT_CPU, cpu, cpu + 1)
    lower(resource.RLIMIT_AS, _vm_size() + 2 * limits.memory_bytes + 1024 * 1024 * 1024)
    lower(resource.RLIMIT_NOFILE, 256)
    lower(resource.RLIMIT_FSIZE, max(4 * limits.write_bytes, 64 * 1024 * 1024))
    lower(resource.RLIMIT_CORE, 0)


class _Parent:
    """The worker's side of the pipe: frames out, `llm` replies in.

    `credit` is the time this plan spent waiting on the agent's own business — a write the agent
    was too busy to read, or the agent's waiting on its output that it reports with each reply —
    which the plan's clock (`clock`) leaves out."""

    def __init__(self, out: BinaryIO, inp: BinaryIO) -> None:
        self.out = out
        self.inp = inp
        self.credit = 0.0
        self._blocked_here = 0.0
        self._reported = 0.0

    def clock(self) -> float:
        return time.monotonic() - self.credit

    def send(self, msg: dict[str, Any]) -> None:
        started = time.monotonic()
        self.out.write(encode(msg))
        self.out.flush()
        waited = time.monotonic() - started
        if waited > _NOTICEABLE_WAIT_S:  # the pipe was full: the agent was not reading
            self._blocked_here += waited
            self.credit = max(self._blocked_here, self._reported)

    def _read_reply(self) -> Any:
        line = self.inp.readline()
        if not line:
            raise ToolError("the agent closed the plan channel", "shutting_down")
        reply = orjson.loads(line)
        blocked = reply.pop("agent_blocked_s", None) if isinstance(reply, dict) else None
        if isinstance(blocked, int | float) and blocked > self._reported:
            self._reported = float(blocked)
            self.credit = max(self._blocked_here, self._reported)
        return reply

    # -- ToolBridge ---------------------------------------------------------------------------
    def call_llm(self, prompt: str, opts: dict[str, Any]) -> str:
        self.send({"type": "llm", "prompt": prompt, "opts": opts})
        reply = self._read_reply()
        if reply.get("error") is not None:
            raise ToolError(str(reply["error"]), str(reply.get("code") or "model_error"))
        return str(reply.get("text", ""))

    def progress(self, message: str) -> None:
        self.send({"type": "progress", "message": message})

    def log(self, message: str) -> None:
        self.send({"type": "log", "message": message})

    def _ask(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.send(msg)
        reply = self._read_reply()
        if not isinstance(reply, dict):
            raise ToolError("bad reply from the agent", "internal_error")
        return reply

    def run_command(self, cmd: str, timeout_s: float) -> dict[str, Any]:
        """Commands run in the agent, inside the OS boundary: this process may execute nothing."""
        return self._ask({"type": "run", "cmd": cmd, "timeout_s": timeout_s})

    def run_tests(self, timeout_s: float) -> dict[str, Any]:
        return self._ask({"type": "test", "timeout_s": timeout_s})

    def audit(self, event: str, fields: dict[str, Any]) -> None:
        """An audit entry the parent writes (skills' file_read/file_write/sandbox_violation)."""
        self.send({"type": "audit", "event": event, "fields": fields})


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _run_actions(actions: list[dict[str, Any]], toolbox: ToolBox) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for action in actions:
        name = str(action.get("tool"))
        res = toolbox.call(name, [action.get("args") or {}], named=True)
        entry: dict[str, Any] = {"tool": canonical_tool(name) or name}
        if isinstance(res, dict) and "error" in res and set(res) <= {"error", "code"}:
            entry.update(ok=False, error=res["error"], code=res.get("code"))
        else:
            entry.update(ok=True, result=_jsonable(res))
        results.append(entry)
    return results


def _confine(sandbox: Any) -> dict[str, Any] | None:
    """Apply the OS boundary the agent asked for; a `done` error frame if it cannot be (fail closed)."""
    if not sandbox:
        return None
    try:
        confine_worker(Policy.from_dict(sandbox))
    except (OSError, ValueError, TypeError) as exc:
        return {"type": "done", "ok": False, "error": {
            "code": "plan_runtime_error", "details": {},
            "message": f"the plan worker could not enter its OS sandbox: {exc}"}}
    return None


def serve(request: dict[str, Any], parent: _Parent) -> dict[str, Any]:
    """Run one request and return the `done` frame."""
    limits = PlanLimits.from_dict(request.get("limits") or {})
    wall = float(request.get("wall_s", limits.wall_s))
    soft_deadline = time.monotonic() + soft_wall(wall)
    hard = request.get("hard_deadline_mono")
    if isinstance(hard, int | float):
        soft_deadline = min(soft_deadline, float(hard) - (wall - soft_wall(wall)))
    apply_rlimits(limits, wall)
    refused = _confine(request.get("sandbox"))
    if refused is not None:
        return refused
    # The worker's environment is scrubbed, so the secrets its writes must refuse come in the request.
    workspace = Workspace(request["workspace"], secret_values=tuple(request.get("secret_values") or ()))
    sent = 0
    toolbox: ToolBox

    def on_record(record: dict[str, Any]) -> None:
        nonlocal sent
        fresh = toolbox.artifacts[sent:]
        sent = len(toolbox.artifacts)
        parent.send({"type": "tool_call", "record": record, "artifacts": fresh})

    toolbox = ToolBox(workspace, limits, parent, deadline=soft_deadline, on_record=on_record)
    done: dict[str, Any] = {"type": "done"}
    try:
        if request.get("kind") == "actions":
            done.update(ok=True, result=_run_actions(request.get("actions") or [], toolbox))
        elif request.get("kind") == "skill_test":
            from agent.skills.sandbox import execute_skill_test

            run, report = execute_skill_test(request, toolbox, parent.audit, limits, soft_deadline)
            done.update(ok=True, result=report, output=run.output, output_truncated=run.output_truncated,
                        instructions=run.instructions)
        else:
            install = None
            if limits.skills_home:  # the `skills` namespace (agent/skills/sandbox.py)
                from agent.skills.sandbox import plan_installer

                install = plan_installer(limits.skills_home, workspace.root, toolbox, parent.audit, limits)
            run = execute_plan(request["source"], request.get("context") or {}, toolbox, limits, soft_deadline,
                               install=install)
            done.update(ok=True, result=run.result, output=run.output, output_truncated=run.output_truncated,
                        instructions=run.instructions)
    except PlanFailure as exc:
        failed_run: PlanRun | None = getattr(exc, "run", None)
        done.update(ok=False, error={"code": exc.code, "message": exc.message, "details": exc.details})
        if failed_run is not None:
            done.update(output=failed_run.output, output_truncated=failed_run.output_truncated,
                        instructions=failed_run.instructions)
    except ToolFatal as exc:
        done.update(ok=False, error={"code": exc.code, "message": exc.message, "details": {"quota": exc.quota}})
    except AgentError as exc:  # a skill that cannot be loaded (metadata, missing test)
        done.update(ok=False, error={"code": exc.code, "message": exc.message, "details": {}})
    except MemoryError:
        done.update(ok=False, error={"code": "plan_memory_exceeded", "message": "worker ran out of memory",
                                     "details": {}})
    done["usage"] = toolbox.usage
    return done


def main() -> int:
    lifeline = os.environ.pop(ENV_FD, "")
    if lifeline.isdigit():
        arm_sigio(int(lifeline))
    proto = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    # A write past RLIMIT_FSIZE should fail with EFBIG, not kill the worker (children reset this).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the agent, which kills us
    parent = _Parent(proto, sys.stdin.buffer)
    parent.send({"type": "ready", "pid": os.getpid()})
    line = sys.stdin.buffer.readline()
    if not line:
        return 0
    try:
        done = serve(orjson.loads(line), parent)
    except Exception as exc:  # report, never hang the parent
        done = {"type": "done", "ok": False,
                "error": {"code": "plan_runtime_error", "message": f"plan worker failed: {type(exc).__name__}: {exc}",
                          "details": {}}}
    parent.send(done)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: nothing is left to clean up
