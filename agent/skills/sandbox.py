"""Skills inside the plan worker: the Python dispatcher behind the skill layer, and its entry points.

Runs in the worker process (`agent.plans.worker`), next to the plan sandbox it builds on: the same
runtime, limits, count hook, output capture and hard wall kill. Every decision a skill's I/O
needs is made here: the path policy (`agent.skills.paths`), dependency resolution from
`skills/allowed/` only (undeclared, missing, draft-on-draft and cycles refused), at most
`max_handles` open files, read/write quotas; each access is audited (`file_read`, `file_write`)
and each refusal as `sandbox_violation` with the exact message the skill sees.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson
from lupa import lua54

from agent.errors import AgentError, PathRejected, SandboxUnavailable
from agent.pathpolicy import MODEL
from agent.plans.commands import CommandRejected, run_command
from agent.plans.limits import RUN_OUTPUT_BYTES, PlanLimits
from agent.plans.sandbox import PlanRun, execute_in_sandbox, from_lua, to_lua
from agent.plans.tools import ToolBox, ToolFatal
from agent.skills.home import ALLOWED, DRAFT, SkillFile, SkillsHome, read_skill_source
from agent.skills.layer import SKILL_LAYER
from agent.skills.metadata import NAME_RE, SkillMetadata
from agent.skills.paths import PathDenied, SkillPathPolicy

__all__ = ["SkillDispatcher", "execute_skill_test", "plan_installer", "dependency_cycle"]

_LOG_CAP = 4096
_ARG_DEPTH, _ARG_NODES = 16, 100_000
AuditSend = Callable[[str, dict[str, Any]], None]


class _Violation(Exception):
    """Refused: the skill gets this message as a Lua error; audited as sandbox_violation."""


class _Failed(Exception):
    """Lua convention `nil, message` (e.g. a file that does not exist)."""


class _Raised(Exception):
    """A plain Lua error (misuse such as a closed handle), not a policy matter."""


def dependency_cycle(home: SkillsHome, start: str, first_deps: tuple[str, ...]) -> list[str] | None:
    """The first cycle through `start` over declared dependencies in allowed/, or None."""
    def deps_of(name: str) -> tuple[str, ...]:
        if name == start:
            return first_deps
        try:
            return home.load(name, ALLOWED).meta.dependencies
        except AgentError:
            return ()

    path: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> list[str] | None:
        if name in path:
            return [*path[path.index(name):], name]
        if name in done:
            return None
        path.append(name)
        for dep in deps_of(name):
            found = visit(dep)
            if found:
                return found
        path.pop()
        done.add(name)
        return None

    return visit(start)


class _Handle:
    def __init__(self, fh: IO[bytes], skill: str, path: str, write: bool) -> None:
        self.fh = fh
        self.skill = skill
        self.path = path
        self.write = write


class SkillDispatcher:
    """Answers the skill layer's `sd(op, ...)` calls for one run; never raises into Lua."""

    def __init__(self, home: SkillsHome, *, base_dir: str, toolbox: ToolBox, limits: PlanLimits,
                 audit: AuditSend, tier: str = ALLOWED, test_skill: SkillFile | None = None,
                 workspace_root: str | None = None) -> None:
        self.home = home
        self.config = home.config()
        self.base_dir = os.path.realpath(base_dir)
        self.toolbox = toolbox
        self.limits = limits
        self.audit = audit
        self.tier = tier                    # where top-level skills come from (tests: the skill's own)
        self.test_skill = test_skill
        self.workspace_root = workspace_root
        self.max_handles = self.config.max_open_file_handles
        self.meta: dict[str, SkillMetadata] = {}
        self.policies: dict[str, SkillPathPolicy] = {}
        self.handles: dict[int, _Handle] = {}
        self.next_id = 1
        self.report: dict[str, Any] | None = None
        self.lua: Any = None
        if test_skill is not None:
            self._register(test_skill.meta)

    # -- registry ------------------------------------------------------------------------------
    def _register(self, meta: SkillMetadata) -> None:
        self.meta[meta.name] = meta
        read_only = (str(self.home.allowed_dir), str(self.home.config_path), str(self.home.state_dir))
        self.policies[meta.name] = SkillPathPolicy(
            skill=meta.name, declared=meta.paths, base_dir=self.base_dir,
            allowed_paths=self.config.allowed_paths, blocked_paths=self.config.blocked_paths,
            read_only_roots=read_only)

    def _violation(self, skill: str, message: str, **fields: Any) -> _Violation:
        self.audit("sandbox_violation", {"skill": skill, "message": message, **fields})
        return _Violation(message)

    # -- the dispatcher ------------------------------------------------------------------------
    def __call__(self, op: Any, *args: Any) -> tuple[Any, ...]:
        try:
            name = op.decode() if isinstance(op, bytes) else str(op)
            handler = getattr(self, f"_op_{name}", None)
            if handler is None:
                return (b"err", f"unknown skill operation {name}".encode())
            plain = [from_lua(a, decode=True, depth=_ARG_DEPTH, nodes=_ARG_NODES) if lua54.lua_type(a) == "table"
                     else (a.decode("utf-8", "surrogateescape") if isinstance(a, bytes) else a) for a in args]
            result = handler(*plain)
            return (b"ok", *(to_lua(self.lua, r) if isinstance(r, (dict, list)) else _lua_scalar(r) for r in result))
        except _Violation as exc:
            return (b"violation", str(exc).encode("utf-8", "replace"))
        except _Failed as exc:
            return (b"fail", str(exc).encode("utf-8", "replace"))
        except _Raised as exc:
            return (b"err", str(exc).encode("utf-8", "replace"))
        except ToolFatal as exc:
            return (b"fatal", exc.code.encode(), exc.message.encode("utf-8", "replace"))
        except lua54.LuaMemoryError:
            return (b"fatal", b"plan_memory_exceeded", b"memory limit exceeded while returning a skill result")
        except AgentError as exc:
            return (b"err", exc.message.encode("utf-8", "replace"))
        except BaseException as exc:  # noqa: BLE001 - nothing may propagate into Lua
            return (b"err", f"internal error in the skill host ({type(exc).__name__})".encode())

    # -- loading -------------------------------------------------------------------------------
    def _check_graph(self, meta: SkillMetadata) -> None:
        cycle = dependency_cycle(self.home, meta.name, meta.dependencies)
        if cycle:
            raise self._violation(meta.name, "dependency cycle: " + " -> ".join(cycle))

    def _op_describe(self, name: Any) -> tuple[Any, ...]:
        skill = self._top(name)
        return (list(skill.meta.public_functions),)

    def _top(self, name: Any) -> SkillFile:
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise _Raised(f"not a skill name: {name!r}")
        try:
            return self.home.load(name, ALLOWED)
        except AgentError as exc:
            if self.home.skill_path(name, DRAFT).is_file():
                raise _Raised(f"skill {name} is a draft (skills/agent/); plans may call promoted skills only") from None
            raise _Raised(exc.message) from None

    def _op_load(self, name: Any) -> tuple[Any, ...]:
        skill = self._top(name)
        self._check_graph(skill.meta)
        self._register(skill.meta)
        self.audit("skill_call", {"skill": skill.name, "version": skill.meta.version})
        return (read_skill_source(skill.path), skill.name)

    def _op_require(self, requirer: Any, dep: Any) -> tuple[Any, ...]:
        requirer = str(requirer)
        if not isinstance(dep, str):
            raise _Raised("require: module name must be a string")
        owner = requirer[5:] if requirer.startswith("test:") else requirer
        meta = self.meta.get(owner)
        if meta is None:
            raise _Raised(f"require from an unknown skill {owner}")
        if requirer.startswith("test:") and self.test_skill is not None and dep == self.test_skill.name:
            self._check_graph(self.test_skill.meta)
            return (read_skill_source(self.test_skill.path), dep, dep)
        if dep not in meta.dependencies:
            raise self._violation(owner, f"undeclared dependency: {dep}", dependency=dep)
        if not NAME_RE.match(dep):
            raise self._violation(owner, f"invalid dependency name: {dep}", dependency=dep)
        if not self.home.skill_path(dep, ALLOWED).is_file():
            if self.home.skill_path(dep, DRAFT).is_file():
                raise self._violation(owner, f"draft skill may not be a dependency: {dep} is only in skills/agent/ "
                                             "(dependencies resolve from skills/allowed/ only)", dependency=dep)
            raise self._violation(owner, f"dependency not found in allowed/: {dep}", dependency=dep)
        skill = self.home.load(dep, ALLOWED)
        self._check_graph(skill.meta)
        self._register(skill.meta)
        return (read_skill_source(skill.path), dep, dep)

    # -- files ---------------------------------------------------------------------------------
    def _op_open(self, skill: Any, path: Any, mode: Any) -> tuple[Any, ...]:
        skill = str(skill)
        if not isinstance(path, str):
            raise _Raised("io.open: path must be a string")
        mode = mode if isinstance(mode, str) else "r"
        flags = _open_flags(mode)
        if flags is None:
            raise _Raised(f"io.open: invalid mode {mode!r}")
        write = any(c in mode for c in "wa+")
        policy = self.policies[skill]
        try:
            real = policy.check(path, write)
            if write:
                self._check_workspace_write(real, path)
        except PathDenied as exc:
            raise self._violation(skill, exc.message, path=path, mode=mode) from None
        if len(self.handles) >= self.max_handles:
            raise self._violation(skill, f"too many open files (limit {self.max_handles})", path=path)
        try:
            fd = os.open(real, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            raise _Failed(f"{path}: {exc.strerror or exc}") from None
        fh = os.fdopen(fd, _fdopen_mode(mode), buffering=0)
        self.audit("file_write" if write else "file_read", {"skill": skill, "path": real, "mode": mode})
        hid = self.next_id
        self.next_id += 1
        self.handles[hid] = _Handle(fh, skill, real, write)
        return (hid,)

    def _check_workspace_write(self, real: str, shown: str) -> None:
        """Inside a plan's workspace, skills obey the plan rule: no bookkeeping dirs, no dot-paths."""
        root = self.workspace_root
        if root is None or not (real == root or real.startswith(root + "/")):
            return
        try:  # the workspace's one path policy, as for a plan's own writes
            MODEL.check_write(os.path.relpath(real, root), shown)
        except PathRejected as exc:
            raise PathDenied(exc.message) from None

    def _handle(self, hid: Any) -> _Handle:
        handle = self.handles.get(int(hid)) if isinstance(hid, (int, float)) else None
        if handle is None:
            raise _Raised("attempt to use a closed file")
        return handle

    def _op_read(self, hid: Any, fmt: Any) -> tuple[Any, ...]:
        handle = self._handle(hid)
        fmt = fmt.lstrip("*") if isinstance(fmt, str) else fmt
        fh = handle.fh
        left = self.limits.read_bytes - self.toolbox.usage["read_bytes"]
        if fmt == "a":
            data = fh.read(left + 1)
        elif fmt in ("l", "L"):
            data = fh.readline(left + 1)
            if not data:
                return (None,)
        elif fmt == "n":
            line = fh.readline(min(left + 1, 200))
            self._count_read(len(line))
            try:
                return (float(line) if any(c in line for c in b".eE") else int(line),)
            except ValueError:
                return (None,)
        elif isinstance(fmt, (int, float)) and not isinstance(fmt, bool) and fmt >= 0:
            data = fh.read(min(int(fmt), left + 1))
            if not data and fmt > 0:
                return (None,)
        else:
            raise _Raised(f"read: invalid format {fmt!r}")
        self._count_read(len(data))
        if fmt == "l" and data.endswith(b"\n"):
            data = data[:-1]
        return (data,)

    def _count_read(self, n: int) -> None:
        usage = self.toolbox.usage
        if usage["read_bytes"] + n > self.limits.read_bytes:
            usage["read_bytes"] = self.limits.read_bytes
            raise ToolFatal(f"read quota exhausted ({self.limits.read_bytes} bytes)", "read_bytes")
        usage["read_bytes"] += n

    def _op_write(self, hid: Any, data: Any) -> tuple[Any, ...]:
        handle = self._handle(hid)
        if not handle.write:
            raise _Failed("file not opened for writing")
        raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else bytes(str(data), "utf-8")
        usage = self.toolbox.usage
        if usage["write_bytes"] + len(raw) > self.limits.write_bytes:
            raise ToolFatal(f"write quota exhausted ({self.limits.write_bytes} bytes)", "write_bytes")
        usage["write_bytes"] += len(raw)
        handle.fh.write(raw)
        return (True,)

    def _op_seek(self, hid: Any, whence: Any, offset: Any) -> tuple[Any, ...]:
        handle = self._handle(hid)
        where = {"set": os.SEEK_SET, "cur": os.SEEK_CUR, "end": os.SEEK_END}.get(str(whence))
        if where is None or not isinstance(offset, (int, float)):
            raise _Raised("seek: whence must be 'set', 'cur' or 'end'")
        return (handle.fh.seek(int(offset), where),)

    def _op_close(self, hid: Any) -> tuple[Any, ...]:
        handle = self._handle(hid)
        del self.handles[int(hid)]
        handle.fh.close()
        return (True,)

    def close_all(self) -> None:
        for handle in self.handles.values():
            try:
                handle.fh.close()
            except OSError:
                pass
        self.handles.clear()

    # -- the rest --------------------------------------------------------------------------------
    def _op_log(self, skill: Any, message: Any) -> tuple[Any, ...]:
        self.audit("skill_log", {"skill": str(skill), "message": str(message)[:_LOG_CAP]})
        return (True,)

    def _op_exec(self, skill: Any, cmd: Any, opts: Any) -> tuple[Any, ...]:
        skill = str(skill)
        meta = self.meta[skill]
        if not meta.commands:
            raise self._violation(skill, "exec is not declared in skill metadata (commands = { ... })")
        if not isinstance(cmd, str):
            raise _Raised("exec: cmd must be a string")
        timeout_ms = opts.get("timeout_ms") if isinstance(opts, dict) else None
        timeout_s = min(float(timeout_ms or self.limits.run_timeout_ms), self.limits.run_timeout_ms) / 1000.0
        timeout_s = min(timeout_s, max(0.0, self.toolbox.deadline - _monotonic()))
        try:
            # Inside the OS sandbox like every command (agent.sandbox), killed with its tree.
            result = run_command(cmd, root=self.base_dir, allow=meta.commands, timeout_s=timeout_s,
                                 output_cap=RUN_OUTPUT_BYTES)
        except SandboxUnavailable as exc:
            raise self._violation(skill, exc.message, command=cmd) from None
        except CommandRejected as exc:
            raise self._violation(skill, f"command rejected: {exc}", command=cmd) from None
        self.audit("skill_exec", {"skill": skill, "command": cmd, "exit_code": result.get("exit_code")})
        return (result,)

    def _op_instructions(self, name: Any) -> tuple[Any, ...]:
        """An Agent Skill's body for the model; its allowed-tools then bound the plan's tool calls."""
        from agent.plans.tools import TOOL_NAMES
        from agent.skills.agent_skills import discover

        root = Path(self.workspace_root) if self.workspace_root else None
        skill = next((s for s in discover(root) if s.name == name), None)
        if skill is None:
            raise _Raised(f"no Agent Skill named {name!r}")
        if skill.disable_model_invocation:
            raise _Raised(f"Agent Skill {name} is user-invocable only (disable-model-invocation: true)")
        if skill.allowed_tools is not None:
            current = self.toolbox.limits.tools if self.toolbox.limits.tools is not None else TOOL_NAMES
            self.toolbox.limits.tools = tuple(t for t in current if t in skill.allowed_tools)
        self.audit("skill_call", {"agent_skill": skill.name, "level": skill.level})
        return ({"name": skill.name, "body": skill.body(), "allowed_tools": list(skill.allowed_tools or [])},)

    def _op_report(self, skill: Any, results: Any) -> tuple[Any, ...]:
        rows = []
        for r in results if isinstance(results, list) else []:
            row = {"name": str(r.get("name")), "status": "pass" if r.get("status") == "pass" else "fail",
                   "duration_ms": int(round(float(r.get("duration_ms") or 0)))}
            if row["status"] == "fail":
                row["message"] = str(r.get("message", ""))[:_LOG_CAP]
            rows.append(row)
        passed = sum(1 for r in rows if r["status"] == "pass")
        self.report = {"skill": str(skill), "total": len(rows), "passed": passed, "failed": len(rows) - passed,
                       "results": rows}
        return (orjson.dumps(self.report).decode(),)


def _monotonic() -> float:
    import time

    return time.monotonic()


def _lua_scalar(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    return value


def _open_flags(mode: str) -> int | None:
    base = mode.replace("b", "")
    return {"r": os.O_RDONLY, "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
            "r+": os.O_RDWR, "w+": os.O_RDWR | os.O_CREAT | os.O_TRUNC,
            "a+": os.O_RDWR | os.O_CREAT | os.O_APPEND}.get(base)


def _fdopen_mode(mode: str) -> str:
    base = mode.replace("b", "")
    return {"r": "rb", "w": "wb", "a": "ab", "r+": "r+b", "w+": "w+b", "a+": "a+b"}[base]


def _layer(lua: Any, host: Any, dispatcher: SkillDispatcher) -> Any:
    dispatcher.lua = lua
    return lua.execute(SKILL_LAYER, host, dispatcher)


def execute_skill_test(request: dict[str, Any], toolbox: ToolBox, audit: AuditSend, limits: PlanLimits,
                       soft_deadline: float) -> tuple[PlanRun, dict[str, Any] | None]:
    """Run a skill's `_test.lua` in the skill sandbox; the run and the structured report (None if
    `test.run_all()` never reported). Relative paths resolve in a scratch copy of the skill's
    `fixtures/<name>/` directory, so tests may write without touching `skills/`."""
    home = SkillsHome(request["home"])
    tier = str(request.get("tier") or DRAFT)
    skill = home.load(str(request["skill"]), tier)
    if skill.test_path is None:
        raise AgentError(f"skill {skill.name} has no {skill.name}_test.lua")
    test_src = read_skill_source(skill.test_path)
    scratch = tempfile.mkdtemp(prefix=f"luallm-skill-{skill.name}-")
    try:
        fixtures = skill.path.parent / "fixtures" / skill.name
        if fixtures.is_dir():
            shutil.copytree(fixtures, scratch, dirs_exist_ok=True, symlinks=False)
        dispatcher = SkillDispatcher(home, base_dir=scratch, toolbox=toolbox, limits=limits, audit=audit,
                                     tier=tier, test_skill=skill)

        def entry(lua: Any, _driver: Any, host: Any) -> Any:
            layer = _layer(lua, host, dispatcher)
            return layer.run_test(skill.name.encode(), test_src.encode("utf-8"), f"{skill.name}_test".encode())

        try:
            run = execute_in_sandbox(entry, toolbox, limits, soft_deadline)
        finally:
            dispatcher.close_all()
        return run, dispatcher.report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def plan_installer(home_dir: str, workspace_root: Path, toolbox: ToolBox, audit: AuditSend,
                   limits: PlanLimits) -> Callable[[Any, Any], None]:
    """`install(lua, host)` for `execute_plan`: adds the `skills` namespace (promoted skills only)."""
    dispatcher = SkillDispatcher(SkillsHome(home_dir), base_dir=str(workspace_root), toolbox=toolbox,
                                 limits=limits, audit=audit, workspace_root=str(workspace_root))

    def install(lua: Any, host: Any) -> None:
        _layer(lua, host, dispatcher).install_plan()

    return install

