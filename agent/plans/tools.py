"""Plan tools: their implementations (the registry of names and signatures: `agent.plans.tool_specs`).

Tools run in the worker process. Every path goes through `Workspace`; every write is atomic and
becomes an artifact; quotas are counted here. A tool either returns plain data or raises
`ToolError` (the plan receives `{error=..., code=...}`); running out of a quota raises `ToolFatal`,
which stops the plan with `plan_quota_exceeded`.
"""

from __future__ import annotations

import re
import stat
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from agent.errors import AgentError
from agent.globs import glob_regex
from agent.pathpolicy import MODEL
from agent.plans.commands import CommandRejected, check_arguments, parse_command
from agent.plans.limits import PlanLimits
from agent.plans.tool_specs import (
    ACTION_ALIASES,
    READ_ONLY_TOOLS,
    SPECS,
    TOOL_NAMES,
    TOOL_SPECS,
    ToolError,
    ToolSpec,
    canonical_tool,
    normalize_args,
    plan_tools_for,
    tools_catalog,
    tools_prompt_text,
)
from agent.workspace import Workspace

__all__ = [
    "ToolSpec", "TOOL_SPECS", "TOOL_NAMES", "ACTION_ALIASES", "ToolError", "ToolFatal", "ToolBridge",
    "ToolBox", "tools_catalog", "tools_prompt_text", "canonical_tool", "plan_tools_for", "READ_ONLY_TOOLS",
]

_MESSAGE_CAP = 4096
_LIST_CAP = 2000
_GREP_FILE_CAP = 2 * 1024 * 1024
_GREP_TEXT_CAP = 400
_RECORD_STR_CAP = 200


class ToolFatal(Exception):
    """A quota ran out: the plan stops with `plan_quota_exceeded`."""

    def __init__(self, message: str, quota: str) -> None:
        super().__init__(message)
        self.message = message
        self.quota = quota
        self.code = "plan_quota_exceeded"


class ToolBridge(Protocol):
    """What tools need from the parent process."""

    def call_llm(self, prompt: str, opts: dict[str, Any]) -> str: ...
    def progress(self, message: str) -> None: ...
    def log(self, message: str) -> None: ...
    def run_command(self, cmd: str, timeout_s: float) -> dict[str, Any]: ...
    def run_tests(self, timeout_s: float) -> dict[str, Any]: ...


def _text(value: Any, what: str) -> str:
    """A str from a Lua string (bytes) or JSON string; invalid UTF-8 is an error, not a crash."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolError(f"{what} is not valid UTF-8 (byte {exc.start})", "invalid_argument") from None
    if isinstance(value, str):
        return value
    raise ToolError(f"{what} must be a string, got {_type_name(value)}", "invalid_argument")


def _data(value: Any, what: str) -> bytes:
    """File content: bytes as-is (Lua strings are bytes), str as UTF-8."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    raise ToolError(f"{what} must be a string, got {_type_name(value)}", "invalid_argument")


def _int(value: Any, what: str, default: int | None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ToolError(f"{what} must be a number", "invalid_argument")
    return int(value)


def _type_name(value: Any) -> str:
    return {bytes: "string", str: "string", dict: "table", list: "table", bool: "boolean",
            int: "number", float: "number", type(None): "nil"}.get(type(value), type(value).__name__)


def _preview(value: Any) -> Any:
    """Arguments as recorded: strings cut so a 10 MB write does not bloat the record."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value if len(value) <= _RECORD_STR_CAP else value[:_RECORD_STR_CAP] + f"…(+{len(value) - _RECORD_STR_CAP})"
    if isinstance(value, dict):
        return {str(k): _preview(v) for k, v in list(value.items())[:50]}
    if isinstance(value, list):
        return [_preview(v) for v in value[:50]]
    return value


def result_size(value: Any) -> int:
    """Rough byte size of a tool result (strings' lengths plus a little per item)."""
    if isinstance(value, (bytes, str)):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + result_size(v) + 2 for k, v in value.items())
    if isinstance(value, list):
        return sum(result_size(v) + 1 for v in value)
    return 8


class _Matcher:
    """One or more globs; a glob without '/' matches the file name at any depth."""

    def __init__(self, patterns: list[str]) -> None:
        self._rules = []
        for p in patterns:
            p = p.strip()
            p = p[2:] if p.startswith("./") else p
            self._rules.append(("/" not in p, glob_regex(p)))

    def __call__(self, rel: str) -> bool:
        base = rel.rsplit("/", 1)[-1]
        return any(rx.match(base if on_base else rel) for on_base, rx in self._rules)


class ToolBox:
    """Executes tool calls for one plan, counting every quota and recording every call."""

    def __init__(self, workspace: Workspace, limits: PlanLimits, bridge: ToolBridge, *,
                 deadline: float, on_record: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.ws = workspace
        self.limits = limits
        self.bridge = bridge
        self.deadline = deadline          # on the plan's clock (`clock`), after which tools stop waiting
        self.on_record = on_record
        self.calls: list[dict[str, Any]] = []
        self.artifacts: list[dict[str, Any]] = []
        self.usage = {"tool_calls": 0, "read_bytes": 0, "write_bytes": 0, "files_written": 0,
                      "llm_calls": 0, "llm_prompt_bytes": 0}
        self._written: set[str] = set()

    # -- entry point ---------------------------------------------------------------------------
    def call(self, name: str, args: list[Any], *, named: bool = False) -> Any:
        """Run tool `name`; returns its result or `{"error", "code"}`; raises ToolFatal on a quota.

        `named=True`: `args` is `[{"param": value}]` (a strict action's `args` object).
        """
        started = time.monotonic()
        self.usage["tool_calls"] += 1
        record: dict[str, Any] = {"seq": len(self.calls) + 1, "tool": name, "args": _preview(args)}
        try:
            if self.usage["tool_calls"] > self.limits.tool_calls:
                raise ToolFatal(f"tool call quota exhausted ({self.limits.tool_calls} calls)", "tool_calls")
            canon = canonical_tool(name)
            if canon is None:
                raise ToolError(f"unknown tool '{name}' (tools: {', '.join(TOOL_NAMES)})", "unknown_tool")
            if self.limits.tools is not None and canon not in self.limits.tools:
                raise ToolError(f"tool '{canon}' is not available to this role (available: "
                                f"{', '.join(self.limits.tools)})", "tool_not_allowed")
            spec = SPECS[canon]
            kwargs = normalize_args(spec, args, named=named)
            record["tool"] = canon
            record["args"] = _preview(kwargs)
            result: Any = getattr(self, f"_t_{canon}")(**kwargs)
            record.update(ok=True, result_bytes=result_size(result))
        except ToolFatal as exc:
            record.update(ok=False, error=exc.message, code=exc.code, result_bytes=0)
            self._finish(record, started)
            raise
        except ToolError as exc:
            result = {"error": exc.message, "code": exc.code}
            record.update(ok=False, error=exc.message, code=exc.code, result_bytes=0)
        except AgentError as exc:
            result = {"error": exc.message, "code": exc.code}
            record.update(ok=False, error=exc.message, code=exc.code, result_bytes=0)
        except OSError as exc:
            msg = f"{name}: {exc.strerror or exc}"
            result = {"error": msg, "code": "os_error"}
            record.update(ok=False, error=msg, code="os_error", result_bytes=0)
        except Exception as exc:  # a bug must not kill the plan's host
            msg = f"{name}: internal error ({type(exc).__name__})"
            result = {"error": msg, "code": "internal_error"}
            record.update(ok=False, error=msg, code="internal_error", result_bytes=0)
        self._finish(record, started)
        return result

    def _finish(self, record: dict[str, Any], started: float) -> None:
        record["ms"] = round((time.monotonic() - started) * 1000, 3)
        record["usage"] = dict(self.usage)
        self.calls.append(record)
        if self.on_record:
            self.on_record(record)

    # -- quotas --------------------------------------------------------------------------------
    def _remaining(self, key: str, limit: int) -> int:
        return max(0, limit - self.usage[key])

    def _count_read(self, n: int) -> None:
        if self.usage["read_bytes"] + n > self.limits.read_bytes:
            self.usage["read_bytes"] = self.limits.read_bytes
            raise ToolFatal(f"read quota exhausted ({self.limits.read_bytes} bytes)", "read_bytes")
        self.usage["read_bytes"] += n

    def _read(self, path: str, cap: int | None = None) -> bytes:
        """Read a file counting the read quota; `cap` truncates silently, the quota does not."""
        remaining = self._remaining("read_bytes", self.limits.read_bytes)
        want = remaining + 1 if cap is None else min(cap, remaining + 1)
        try:
            data = self.ws.read_bytes(path, want, policy=MODEL)
        except IsADirectoryError:
            raise ToolError(f"not a file: {path}", "not_a_file") from None
        except FileNotFoundError:
            raise ToolError(f"no such file: {path}", "not_found") from None
        self._count_read(len(data))
        return data

    def _write(self, path: str, data: bytes, exclusive: bool) -> dict[str, Any]:
        if self.usage["write_bytes"] + len(data) > self.limits.write_bytes:
            raise ToolFatal(f"write quota exhausted ({self.limits.write_bytes} bytes)", "write_bytes")
        # The workspace's path policy (protected dirs, dot-paths, symlinks) and secret guard
        # decide; the checks run before the quota so a refused path costs no file slot.
        key = self.ws.check_write(path, data, policy=MODEL)
        if key not in self._written and len(self._written) >= self.limits.files_written:
            raise ToolFatal(f"files-written quota exhausted ({self.limits.files_written} files)", "files_written")
        try:
            art = self.ws.write_atomic(path, data, policy=MODEL, exclusive=exclusive)
        except FileExistsError:
            raise ToolError(f"file already exists: {path}", "exists") from None
        self.usage["write_bytes"] += len(data)
        self._written.add(art.path)
        self.usage["files_written"] = len(self._written)
        self.artifacts.append(art.to_dict())
        return art.to_dict()

    def clock(self) -> float:
        """The plan's clock: the bridge's when it keeps one (the agent's own waiting left out)."""
        clock = getattr(self.bridge, "clock", None)
        return float(clock()) if callable(clock) else time.monotonic()

    def _time_left(self) -> float:
        return self.deadline - self.clock()

    # -- tools ---------------------------------------------------------------------------------
    def _t_read(self, path: Any, max_bytes: Any = None, line_range: Any = None) -> bytes:
        rel = _text(path, "path")
        cap = _int(max_bytes, "max_bytes", None)
        if cap is not None and cap < 0:
            raise ToolError("max_bytes must be >= 0", "invalid_argument")
        data = self._read(rel, cap)
        if line_range is None:
            return data
        if not (isinstance(line_range, list) and len(line_range) == 2):
            raise ToolError("line_range must be {first, last}", "invalid_argument")
        first = _int(line_range[0], "line_range[1]", 1) or 1
        last = _int(line_range[1], "line_range[2]", None)
        lines = data.splitlines(keepends=True)
        last = len(lines) if last is None or last < 0 else last
        return b"".join(lines[max(first, 1) - 1:last])

    def _t_write(self, path: Any, content: Any) -> dict[str, Any]:
        return self._write(_text(path, "path"), _data(content, "content"), exclusive=False)

    def _t_create(self, path: Any, content: Any) -> dict[str, Any]:
        return self._write(_text(path, "path"), _data(content, "content"), exclusive=True)

    def _t_edit(self, path: Any, old: Any, new: Any, replace_all: Any = False) -> dict[str, Any]:
        rel = _text(path, "path")
        old_b, new_b = _data(old, "old"), _data(new, "new")
        if not old_b:
            raise ToolError("edit: old text must not be empty", "invalid_argument")
        data = self._read(rel)
        count = data.count(old_b)
        if count == 0:
            raise self._missing_edit(rel, data, old_b)
        if count > 1 and not replace_all:
            raise ToolError(f"edit: old text occurs {count} times in {rel}; pass replace_all=true "
                            "or include more context", "ambiguous")
        updated = data.replace(old_b, new_b) if replace_all else data.replace(old_b, new_b, 1)
        out = self._write(rel, updated, exclusive=False)
        out["replacements"] = count if replace_all else 1
        return out

    def _missing_edit(self, rel: str, data: bytes, old_b: bytes) -> ToolError:
        """`old` not in the file: the error says where its first line is, or the nearest line to copy."""
        from agent.edits.changes import where_old_text_is

        try:
            where = where_old_text_is(data.decode("utf-8"), old_b.decode("utf-8"))
        except UnicodeDecodeError:
            return ToolError(f"edit: old text not found in {rel}", "not_found")
        return ToolError(f"edit: the old text is not in {rel}; {where}", "not_found")

    def _t_list(self, path: Any = None) -> list[str]:
        rel = _text(path, "path") if path is not None else "."
        try:
            is_dir = stat.S_ISDIR(self.ws.lstat(rel, policy=MODEL).st_mode)
        except FileNotFoundError:
            raise ToolError(f"no such directory: {rel}", "not_found") from None
        if not is_dir:
            raise ToolError(f"not a directory: {rel}", "not_a_directory")
        entries = self.ws.listdir(rel, policy=MODEL)
        return [name + "/" if is_dir else name for name, is_dir in entries[:_LIST_CAP]]

    def _walk(self, start: str | None) -> Iterator[str]:
        prefix = ""
        if start not in (None, "", "."):
            key = self.ws.normalize(start or ".")
            try:
                self.ws.lstat(start or ".", policy=MODEL)  # the policy, and no link as the start
            except FileNotFoundError:
                return
            prefix = key + "/" if key else ""
        for rel in self.ws.iter_files():
            if rel.startswith(prefix):
                yield rel

    def _t_glob(self, pattern: Any, max_results: Any = None, max_depth: Any = None, path: Any = None) -> list[str]:
        patterns = [_text(p, "pattern") for p in pattern] if isinstance(pattern, list) else [_text(pattern, "pattern")]
        limit = _int(max_results, "max_results", 200) or 200
        depth = _int(max_depth, "max_depth", None)
        start = _text(path, "path") if path is not None else None
        match = _Matcher(patterns)
        base_depth = 0 if start in (None, "", ".") else start.strip("/").count("/") + 1
        out: list[str] = []
        for rel in self._walk(start):
            if depth is not None and rel.count("/") - base_depth >= depth:
                continue
            if match(rel):
                out.append(rel)
                if len(out) >= limit:
                    break
        return out

    def _t_grep(self, query: Any, globs: Any = None, max_results: Any = None, literal: Any = False) -> list[dict[str, Any]]:
        q = _text(query, "query")
        if not q:
            raise ToolError("grep: empty query", "invalid_argument")
        try:
            rx = re.compile(re.escape(q) if literal else q)
        except re.error:
            rx = re.compile(re.escape(q))  # not a valid regex: search for it literally
        limit = _int(max_results, "max_results", 100) or 100
        if globs is None:
            match = None
        else:
            pats = globs if isinstance(globs, list) else [globs]
            match = _Matcher([_text(p, "globs") for p in pats])
        fast = self._ripgrep(q, bool(literal), match, limit)
        if fast is not None:
            return fast
        out: list[dict[str, Any]] = []
        for rel in self._walk(None):
            if match is not None and not match(rel):
                continue
            try:
                if self.ws.lstat(rel, policy=MODEL).st_size > _GREP_FILE_CAP:
                    continue
                data = self._read(rel)
            except (ToolError, AgentError, OSError):
                continue
            if b"\x00" in data[:8192]:
                continue
            for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
                if rx.search(line):
                    out.append({"path": rel, "line": n, "text": line[:_GREP_TEXT_CAP]})
                    if len(out) >= limit:
                        return out
        return out

    def _ripgrep(self, query: str, literal: bool, match: _Matcher | None, limit: int) -> list[dict[str, Any]] | None:
        """ripgrep's hits, each re-judged by the walk's rules, the globs and the path policy."""
        from agent.plans.search import ripgrep_lines

        rules = self.ws.ignore_rules()

        def accept(rel: str) -> bool:
            if (match is not None and not match(rel)) or rules.path_ignored(rel):
                return False
            try:
                self.ws.resolve(rel, policy=MODEL, write=False)
            except AgentError:
                return False
            return True

        return ripgrep_lines(str(self.ws.root), query, literal=literal, file_cap=_GREP_FILE_CAP, accept=accept,
                             limit=limit, text_cap=_GREP_TEXT_CAP, timeout_s=max(0.5, self._time_left()))

    def _t_run(self, cmd: Any, timeout_ms: Any = None) -> dict[str, Any]:
        command = _text(cmd, "cmd")
        wanted = _int(timeout_ms, "timeout_ms", self.limits.run_timeout_ms) or self.limits.run_timeout_ms
        timeout_s = min(wanted, self.limits.run_timeout_ms) / 1000.0
        timeout_s = min(timeout_s, max(0.0, self._time_left()))
        try:  # a first check here for a quick answer; the agent checks again and runs it confined
            check_arguments(parse_command(command, self.limits.run_allow), str(self.ws.root))
        except CommandRejected as exc:
            raise ToolError(str(exc), "command_rejected") from None
        return _reply(self.bridge.run_command(command, timeout_s))

    def _t_test(self) -> dict[str, Any]:
        return _reply(self.bridge.run_tests(max(0.0, self._time_left())))

    def _t_call_llm(self, prompt: Any, **opts: Any) -> str:
        text = _text(prompt, "prompt")
        size = len(text.encode("utf-8"))
        if self.usage["llm_calls"] + 1 > self.limits.llm_calls:
            raise ToolFatal(f"nested model call quota exhausted ({self.limits.llm_calls} calls)", "llm_calls")
        if self.usage["llm_prompt_bytes"] + size > self.limits.llm_prompt_bytes:
            raise ToolFatal(f"nested prompt quota exhausted ({self.limits.llm_prompt_bytes} bytes)", "llm_prompt_bytes")
        self.usage["llm_calls"] += 1
        self.usage["llm_prompt_bytes"] += size
        clean = {str(k): (v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for k, v in opts.items()}
        return self.bridge.call_llm(text, clean)

    def _t_progress(self, message: Any) -> bool:
        self.bridge.progress(_message(message))
        return True

    def _t_log(self, message: Any) -> bool:
        self.bridge.log(_message(message))
        return True


def _reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A result from the agent, or its `{error, code}` as a ToolError."""
    if "error" in reply:
        raise ToolError(str(reply["error"]), str(reply.get("code") or "tool_error"))
    return reply


def _message(value: Any) -> str:
    if isinstance(value, bytes):
        text = value.decode("utf-8", errors="replace")
    elif isinstance(value, str):
        text = value
    else:
        text = str(value)
    return text[:_MESSAGE_CAP]
