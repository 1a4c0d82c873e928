"""Prompt pieces the roles share: the project's files, feedback and JSON quoted into a role's request."""

from __future__ import annotations

from typing import Any

import orjson

from agent.command_context import CommandContext
from agent.errors import AgentError
from agent.pathpolicy import MODEL, PathPolicy
from agent.prompt import PromptBuilder

__all__ = ["quote_files", "read_project_text", "number_lines", "small_project_files", "quote_feedback", "quote_json",
           "report_cuts", "listing_section"]


def quote_json(title: str, value: Any) -> str:
    return f"## {title}\n```json\n{orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()}\n```\n"


def quote_files(ctx: CommandContext, builder: PromptBuilder, paths: list[str], policy: PathPolicy = MODEL, *,
                numbered: bool = False) -> str:
    """File sections for the existing paths among `paths` that `policy` lets a prompt show (budgeted).

    Task files come from an intake's answer, so by default they are a model-facing read: no
    dot-path (`.env`) or bookkeeping file is ever quoted to the model.

    `numbered` prefixes each line with its number (`  7| ...`), so a reviewer can cite real lines;
    the builder gets the plain text, which it copies into `edits`.
    """
    out = []
    for rel in paths:
        text = read_project_text(ctx, rel, policy=policy)
        if text is None:
            continue
        out.append(builder.file(rel, number_lines(text) if numbered else text))
    return "\n".join(out)


def read_project_text(ctx: CommandContext, rel: str, max_bytes: int = 4 * 1024 * 1024,
                      policy: PathPolicy = MODEL) -> str | None:
    """A workspace file's text, or None when it is missing, refused by `policy`, not a file or not UTF-8."""
    if not isinstance(rel, str):
        return None
    try:
        if not ctx.workspace.is_file(rel, policy=policy):
            return None
        return ctx.workspace.read_text(rel, max_bytes=max_bytes, policy=policy)
    except (AgentError, OSError, ValueError):
        return None


def small_project_files(ctx: CommandContext, listing: list[str], shown: set[str],
                        max_file_bytes: int = 8 * 1024) -> list[str]:
    """Small text files of `listing` not shown yet, while they fit in `ctx.settings.context_bytes`."""
    out: list[str] = []
    used = 0
    for rel in listing:
        if rel in shown:
            continue
        try:
            size = ctx.workspace.lstat(rel, policy=MODEL).st_size
        except (AgentError, OSError):
            continue
        if size > max_file_bytes or used + size > ctx.settings.context_bytes:
            continue
        text = read_project_text(ctx, rel, max_bytes=max_file_bytes)
        if text is None or "\x00" in text:
            continue
        out.append(rel)
        used += size
    return out


def number_lines(text: str) -> str:
    lines = text.splitlines()
    width = max(3, len(str(len(lines))))
    return "\n".join(f"{n:>{width}}| {line}" for n, line in enumerate(lines, 1))


_VOLATILE = ("created_at",)


def quote_feedback(ctx: CommandContext, builder: PromptBuilder, paths: list[str]) -> str:
    """Like quote_files for JSON feedback files, without timestamps: prompts stay deterministic,
    so recorded responses replay and identical situations ask identical questions."""
    out = []
    for rel in paths:
        if not ctx.workspace.exists(rel):
            continue
        try:
            data = orjson.loads(ctx.workspace.read_bytes(rel, max_bytes=4 * 1024 * 1024))
        except (OSError, AgentError, orjson.JSONDecodeError):
            continue
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in _VOLATILE}
        out.append(builder.file(rel, orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()))
    return "\n".join(out)


def report_cuts(ctx: CommandContext, builder: PromptBuilder) -> list[dict[str, Any]]:
    """Say what the budget cut, once in a log line; the list also goes into the terminal payload."""
    cuts = builder.cut_summary()
    if cuts:
        ctx.log("info", "prompt budget cut files", files=[c["path"] for c in cuts][:20], count=len(cuts))
    return cuts


def listing_section(listing: list[str], shown: set[str]) -> str:
    """The project's other files, those the prompt does not quote; "" when it quotes them all.

    A listing of what the prompt already shows adds nothing but tokens, and a small model that
    ends its reading on it gives the list back instead of an answer."""
    if not listing:
        return "## Project files\n(the project has no files yet)"
    rest = [p for p in listing if p not in shown]
    return "## Other files of the project (not shown)\n" + "\n".join(rest) if rest else ""
