"""Run one Lua plan in a fresh lupa Lua 5.4 runtime (inside the worker process).

Strings cross the boundary as bytes (`encoding=None`), so lupa never raises a Python
UnicodeDecodeError into Lua; Python objects never reach the plan: the single dispatcher converts
arguments to plain Python data and results to plain Lua tables, and never raises into Lua.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lupa import lua54

from agent.plans.limits import PlanLimits
from agent.plans.prelude import PRELUDE
from agent.plans.tools import TOOL_NAMES, ToolBox, ToolError, ToolFatal

__all__ = ["PlanFailure", "PlanRun", "execute_plan", "execute_in_sandbox", "FORBIDDEN_GLOBALS", "HOOK_PERIOD", "new_runtime",
           "from_lua", "to_lua"]

# Names whose access is a sandbox violation (reported with the name), not just an unknown global.
FORBIDDEN_GLOBALS: frozenset[str] = frozenset({
    "os", "io", "debug", "package", "require", "load", "loadstring", "dofile", "loadfile",
    "rawget", "rawset", "rawequal", "rawlen", "collectgarbage", "python", "getfenv", "setfenv",
    "module", "newproxy", "jit", "ffi", "bit32", "unpack", "arg", "_ENV_real",
})
# Instructions between count-hook calls: the budget's granularity.
HOOK_PERIOD = 1000
_MEMERR = b"not enough memory"
_LINE = re.compile(rb"^plan:(\d+):\s*")
_ARG_DEPTH, _ARG_NODES = 32, 100_000
_RESULT_DEPTH, _RESULT_NODES = 100, 1_000_000


class PlanFailure(Exception):
    """How the plan ended when it did not return: an error code, message and details."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = {k: v for k, v in details.items() if v is not None}


class PlanRun:
    """What a finished plan produced (also filled in when it failed)."""

    def __init__(self) -> None:
        self.result: Any = None
        self.output = ""
        self.output_truncated = False
        self.instructions = 0


def _deny(*_args: Any) -> Any:
    raise AttributeError("access to Python objects is not allowed")


def new_runtime(max_memory: int | None = None) -> Any:
    """A bare lupa Lua 5.4 runtime with every Python bridge feature off."""
    return lua54.LuaRuntime(register_eval=False, register_builtins=False, unpack_returned_tuples=True,
                            encoding=None, attribute_handlers=(_deny, _deny), max_memory=max_memory)


# -- conversion ------------------------------------------------------------------------------
class _Budget:
    def __init__(self, nodes: int) -> None:
        self.left = nodes

    def take(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise ValueError("value too large")


def from_lua(value: Any, *, decode: bool, depth: int = _RESULT_DEPTH, nodes: int = _RESULT_NODES) -> Any:
    """Plain Python data from a Lua value (raw iteration: no metamethod runs).

    Sequences 1..n become lists, other tables dicts with string keys, the empty table `[]`.
    `decode` turns strings into str (results) or keeps bytes (tool arguments). Functions,
    coroutines and userdata raise ValueError.
    """
    return _from_lua(value, decode, depth, _Budget(nodes))


def _from_lua(value: Any, decode: bool, depth: int, budget: _Budget) -> Any:
    budget.take()
    kind = lua54.lua_type(value)
    if kind is None:
        if isinstance(value, bytes):
            return value.decode("utf-8", errors="replace") if decode else value
        if isinstance(value, float) and value != value:
            return None
        return value
    if kind != "table":
        raise ValueError(f"a Lua {kind} is not plain data")
    if depth <= 0:
        raise ValueError("value nested too deeply (or cyclic)")
    items = []
    for k, v in value.items():
        budget.take()
        items.append((k, _from_lua(v, decode, depth - 1, budget)))
    keys = [k for k, _ in items]
    if all(isinstance(k, int) and not isinstance(k, bool) for k in keys) and sorted(keys) == list(range(1, len(keys) + 1)):
        return [v for _, v in sorted(items, key=lambda kv: kv[0])]
    out: dict[Any, Any] = {}
    for k, v in items:
        if isinstance(k, bytes):
            key: Any = k.decode("utf-8", errors="replace")
        elif isinstance(k, (int, float)) and not isinstance(k, bool):
            key = str(int(k)) if isinstance(k, float) and k.is_integer() else str(k)
        elif isinstance(k, bool):
            key = "true" if k else "false"
        else:
            raise ValueError(f"a Lua {lua54.lua_type(k) or type(k).__name__} key is not plain data")
        out[key] = v
    return out


def _plain(obj: Any) -> Any:
    """Python data with every string as UTF-8 bytes (what Lua strings must be made from)."""
    if obj is None or isinstance(obj, (bool, float, bytes)):
        return obj
    if isinstance(obj, int):
        return obj if -(2**63) <= obj < 2**63 else float(obj)
    if isinstance(obj, str):
        return obj.encode("utf-8", errors="surrogateescape")
    if isinstance(obj, dict):
        return {_plain(str(k) if not isinstance(k, (str, int, bytes)) else k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return str(obj).encode("utf-8", errors="replace")


def to_lua(lua: Any, obj: Any) -> Any:
    """A Lua value (nil, boolean, number, string or a fresh table) for plain Python data."""
    plain = _plain(obj)
    if isinstance(plain, (dict, list)):
        return lua.table_from(plain, recursive=True)
    return plain


# -- dispatcher -------------------------------------------------------------------------------
def _make_dispatch(lua: Any, toolbox: ToolBox) -> Callable[..., tuple[Any, ...]]:
    """The one Python callable the plan's tool closures reach; it never raises into Lua."""

    def dispatch(name: Any, *args: Any) -> tuple[Any, ...]:
        try:
            tool = name.decode("utf-8", errors="replace") if isinstance(name, bytes) else str(name)
            try:
                plain_args = [from_lua(a, decode=False, depth=_ARG_DEPTH, nodes=_ARG_NODES) for a in args]
            except ValueError as exc:
                plain_args = None
                result: Any = {"error": f"{tool}: bad argument ({exc})", "code": "invalid_argument"}
                toolbox.call(tool, [])  # still counts and is recorded as a failed call
            if plain_args is not None:
                result = toolbox.call(tool, plain_args)
            return (b"ok", to_lua(lua, result))
        except ToolFatal as exc:
            return (b"fatal", exc.code.encode(), exc.message.encode("utf-8", "replace"))
        except lua54.LuaMemoryError:
            return (b"fatal", b"plan_memory_exceeded", b"memory limit exceeded while returning a tool result")
        except ToolError as exc:
            return (b"ok", to_lua(lua, {"error": exc.message, "code": exc.code}))
        except BaseException as exc:  # noqa: BLE001 - nothing may propagate into Lua
            try:
                return (b"ok", to_lua(lua, {"error": f"internal error ({type(exc).__name__})", "code": "internal_error"}))
            except BaseException:  # noqa: BLE001
                return (b"fatal", b"plan_runtime_error", b"tool dispatcher failed")

    return dispatch


# -- running ----------------------------------------------------------------------------------
def _message(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if lua54.lua_type(value) == "table":
        fields = dict(value.items())  # raw iteration: no __index metamethod runs
        for key in (b"error", b"message"):
            if isinstance(fields.get(key), bytes):
                return str(fields[key].decode("utf-8", errors="replace"))
        return "plan raised a table as its error"
    if value is None:
        return "plan raised nil as its error"
    return str(value)


def execute_plan(source: str, context: dict[str, Any], toolbox: ToolBox, limits: PlanLimits,
                 soft_deadline: float, install: Callable[[Any, Any], None] | None = None) -> PlanRun:
    """Run `source` to completion; returns a PlanRun or raises PlanFailure (run attached as .run).

    `install(lua, host)` runs before the plan and may add to the plan's environment
    (`host.plan_env`), e.g. the `skills` namespace.
    """
    def entry(lua: Any, driver: Any, host: Any) -> Any:
        if install is not None:
            install(lua, host)
        return driver(source.encode("utf-8", errors="surrogateescape"), to_lua(lua, context))

    return execute_in_sandbox(entry, toolbox, limits, soft_deadline)


def execute_in_sandbox(entry: Callable[[Any, Any, Any], Any], toolbox: ToolBox, limits: PlanLimits,
                       soft_deadline: float) -> PlanRun:
    """Boot the prelude in a fresh runtime and run `entry(lua, driver, host)` under its limits.

    `entry` returns what `xpcall` returns (ok, value | error); a fatal condition, memory error or
    plain error becomes a PlanFailure exactly as for a plan.
    """
    lua = new_runtime(limits.memory_bytes)
    budget = max(0, int(limits.instructions))
    driver, state, host = lua.execute(
        PRELUDE, _make_dispatch(lua, toolbox), toolbox.clock, budget, HOOK_PERIOD,
        int(limits.output_bytes), int(limits.memory_bytes), float(soft_deadline),
        to_lua(lua, list(TOOL_NAMES)), to_lua(lua, dict.fromkeys(FORBIDDEN_GLOBALS, True)))
    sethook = lua.eval("debug.sethook")
    run = PlanRun()
    raised: BaseException | None = None
    ret: tuple[Any, ...] = ()
    try:
        ret = entry(lua, driver, host)
    except lua54.LuaMemoryError as exc:
        raised = exc
    except lua54.LuaError as exc:
        raised = exc
    finally:
        sethook()  # no plan code runs from here on; the hook must not fire in our own Lua calls
    code, message, name, line, used, output, truncated, err_line, mem_line = state()
    run.instructions = int(used or 0)
    run.output = (output or b"").decode("utf-8", errors="replace")
    run.output_truncated = bool(truncated)
    if not isinstance(ret, tuple):
        ret = (ret,)
    failure = _failure(ret, raised, code, message, name, line, err_line, mem_line)
    if failure is not None:
        failure.run = run  # type: ignore[attr-defined]
        raise failure
    try:
        run.result = from_lua(ret[1] if len(ret) > 1 else None, decode=True)
    except ValueError as exc:
        failure = PlanFailure("plan_runtime_error", f"run(context) returned something that is not plain data: {exc}")
        failure.run = run  # type: ignore[attr-defined]
        raise failure from None
    return run


def _failure(ret: tuple[Any, ...], raised: BaseException | None, code: Any, message: Any, name: Any,
             line: Any, err_line: Any, mem_line: Any) -> PlanFailure | None:
    """Classify how the plan ended: a fatal condition first, then memory, syntax, a plain error."""
    if code:
        return PlanFailure(_message(code), _message(message), line=line,
                           name=_message(name) if name is not None else None)
    if isinstance(raised, lua54.LuaMemoryError):
        return PlanFailure("plan_memory_exceeded", "memory limit exceeded", line=mem_line)
    if raised is not None:
        text = str(raised).splitlines()[0] if str(raised) else type(raised).__name__
        return PlanFailure("plan_runtime_error", text, line=err_line)
    if ret and ret[0] is True:
        return None
    if len(ret) >= 3 and ret[1] == b"syntax":
        raw = ret[2] if isinstance(ret[2], bytes) else b""
        m = _LINE.match(raw)
        msg = raw[m.end():] if m else raw
        return PlanFailure("plan_invalid", msg.decode("utf-8", "replace"), line=int(m.group(1)) if m else None)
    err = ret[1] if len(ret) > 1 else None
    if err == _MEMERR:
        return PlanFailure("plan_memory_exceeded", "memory limit exceeded", line=mem_line or err_line)
    if isinstance(err, bytes):
        m = _LINE.match(err)
        if m:
            return PlanFailure("plan_runtime_error", err[m.end():].decode("utf-8", "replace"), line=int(m.group(1)))
    return PlanFailure("plan_runtime_error", _message(err), line=err_line)
