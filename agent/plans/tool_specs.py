"""The plan tools as a plan, a prompt or an action list names them: each tool's signature, what it
does, its parameters and their aliases; which tools a role's plan may call. Their implementations
are `agent.plans.tools.ToolBox`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolSpec", "TOOL_SPECS", "TOOL_NAMES", "READ_ONLY_TOOLS", "ACTION_ALIASES", "SPECS", "plan_tools_for",
           "canonical_tool", "tools_catalog", "tools_prompt_text", "ToolError", "normalize_args"]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: positional parameters, named options and their aliases, for prompts and calls."""

    name: str
    signature: str
    description: str
    params: tuple[str, ...]
    options: tuple[str, ...] = ()
    aliases: dict[str, str] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    open_options: bool = False       # call_llm forwards unknown options to the model client


_PATH = {"file": "path", "filepath": "path", "file_path": "path"}
_OLD = {k: "old" for k in ("old_string", "old_text", "oldText", "search", "from")}
_NEW = {k: "new" for k in ("new_string", "new_text", "newText", "replace", "to")}

TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("read", "tools.read(path, {max_bytes?, line_range?}) -> string | {error}",
             "Read a workspace file. line_range = {first, last}, 1-based inclusive.",
             ("path",), ("max_bytes", "line_range"), _PATH, ("path",)),
    ToolSpec("write", "tools.write(path, content) -> {path, size, sha256} | {error}",
             "Create or overwrite a file atomically; it becomes an artifact.",
             ("path", "content"), (), _PATH, ("path", "content")),
    ToolSpec("create", "tools.create(path, content) -> {path, size, sha256} | {error}",
             "Create a new file; fails if it already exists.",
             ("path", "content"), (), _PATH, ("path", "content")),
    ToolSpec("edit", "tools.edit(path, old, new, {replace_all?}) -> {path, size, sha256, replacements} | {error}",
             "Replace the exact text `old` with `new` (once, unless replace_all). "
             "Aliases: old_string/old_text/search/from, new_string/new_text/replace/to.",
             ("path", "old", "new"), ("replace_all",), {**_PATH, **_OLD, **_NEW}, ("path", "old", "new")),
    ToolSpec("list", "tools.list(path?) -> {name, ...} | {error}",
             "Names in a directory (default the workspace root); directories end with '/'.",
             ("path",), (), {"dir": "path", "directory": "path", **_PATH}),
    ToolSpec("glob", "tools.glob(pattern, {max_results?, max_depth?, path?}) -> {path, ...} | {error}",
             "Workspace files matching a glob ('*.py' matches at any depth, 'src/**/*.lua').",
             ("pattern",), ("max_results", "max_depth", "path"),
             {"globs": "pattern", "start_path": "path"}, ("pattern",)),
    ToolSpec("grep", "tools.grep(query, {globs?, max_results?, literal?}) -> {{path, line, text}, ...} | {error}",
             "Search file contents for a regular expression (or a literal string).",
             ("query",), ("globs", "max_results", "literal"), {"pattern": "query", "regex": "query"}, ("query",)),
    ToolSpec("run", "tools.run(cmd, {timeout_ms?}) -> {exit_code, stdout, stderr, timed_out, truncated} | {error}",
             "Run an allow-listed command in the workspace root (no shell; | ; && || allowed).",
             ("cmd",), ("timeout_ms",), {"command": "cmd"}, ("cmd",)),
    ToolSpec("test", "tools.test() -> {status, summary, passed?, failed?, total?, exit_code, output_tail} | {error}",
             "Run the configured test command (inside the OS sandbox; output tail only) to check your work.",
             (), (), {}, ()),
    ToolSpec("call_llm", "tools.call_llm(prompt, {options}) -> string | {error}",
             "Ask the model a nested question; counts against the plan's model-call budget.",
             ("prompt",), (), {}, ("prompt",), open_options=True),
    ToolSpec("progress", "tools.progress(message) -> true", "Report progress to the orchestrator.",
             ("message",), (), {"msg": "message"}, ("message",)),
    ToolSpec("log", "tools.log(message) -> true", "Write a line to the agent's log.",
             ("message",), (), {"msg": "message"}, ("message",)),
)
TOOL_NAMES: tuple[str, ...] = tuple(s.name for s in TOOL_SPECS)
# What plans of roles that must not change files may call.
READ_ONLY_TOOLS: tuple[str, ...] = ("read", "list", "glob", "grep", "run", "call_llm", "progress", "log")


def plan_tools_for(role: str) -> tuple[str, ...] | None:
    """Only the builder's plans change files; the other roles' file effects come from their answer."""
    return None if role == "builder" else READ_ONLY_TOOLS


SPECS = {s.name: s for s in TOOL_SPECS}
# Seed 002 tool names and the Claude-style names, accepted in strict action lists.
ACTION_ALIASES: dict[str, str] = {
    "read_file": "read", "write_file": "write", "create_file": "create", "list_directory": "list",
    "find_files": "glob", "edit_file": "edit", "Read": "read", "Write": "write", "Edit": "edit",
    "Glob": "glob", "Grep": "grep", "Bash": "run",
}


def canonical_tool(name: str) -> str | None:
    """The Lua tool name for `name` (aliases included), or None."""
    if name in SPECS:
        return name
    return ACTION_ALIASES.get(name)


def tools_catalog() -> list[dict[str, str]]:
    """[{"name", "signature", "description"}] for `luallm-agent tools --json`."""
    return [{"name": s.name, "signature": s.signature, "description": s.description} for s in TOOL_SPECS]


def tools_prompt_text(allowed: tuple[str, ...] | None = None) -> str:
    """The tool list as it appears in prompts (only the `allowed` tools, when given)."""
    lines = ["Tools (in the `tools` table, also context.tools; each returns data or {error=...}):"]
    lines += [f"- {s.signature}\n    {s.description}" for s in TOOL_SPECS if allowed is None or s.name in allowed]
    return "\n".join(lines)


class ToolError(Exception):
    """A tool call failed; the plan gets `{error = message, code = code}`."""

    def __init__(self, message: str, code: str = "tool_error") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def normalize_args(spec: ToolSpec, args: list[Any], *, named: bool = False) -> dict[str, Any]:
    """Positional, trailing-options or single-table calls → canonical keyword arguments."""
    keys = {*spec.params, *spec.options}
    if named or (len(args) == 1 and isinstance(args[0], dict) and args[0]
                 and any(spec.aliases.get(str(k), str(k)) in keys for k in args[0])):
        raw = dict(args[0])
    else:
        raw = {}
        for i, value in enumerate(args):
            if i < len(spec.params):
                raw[spec.params[i]] = value
            elif i == len(spec.params) and isinstance(value, dict):
                for k, v in value.items():
                    raw.setdefault(k, v)
            elif i == len(spec.params) and value is None:
                continue
            else:
                raise ToolError(f"{spec.name}: too many arguments (signature: {spec.signature})", "invalid_argument")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = key.decode("utf-8", errors="replace") if isinstance(key, bytes) else str(key)
        canon = spec.aliases.get(name, name)
        if canon not in keys and not spec.open_options:
            raise ToolError(f"{spec.name}: unknown argument '{name}' (signature: {spec.signature})", "invalid_argument")
        out[canon] = value
    for req in spec.required:
        if out.get(req) is None:
            raise ToolError(f"{spec.name}: missing argument '{req}' (signature: {spec.signature})", "invalid_argument")
    return out
