"""`tools.run`: command-line safety (seed 001) and execution without a shell.

The command line is split on `|`, `;`, `&&`, `||` outside quotes; each segment's first word must
be on the allow-list. `$(`, backticks, newlines, redirections, background `&` and subshells are
refused. No shell runs: pipelines are wired with pipes here, so `$VAR` is literal and only `*?[`
words are expanded (as paths under the workspace root, like a shell glob with `cd` to the root).

These checks are a first filter, not the boundary: an allowed program can start another (`sort
--compress-program=sh`) or follow a link out. Every process runs inside the OS sandbox
(`agent.sandbox.CommandBox`): it may write only the workspace and a private /tmp, read no secret,
reach no network, and it dies with its box — at the timeout, or when the agent goes.
"""

from __future__ import annotations

import glob as globmod
import os
import shlex
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agent.errors import SandboxUnavailable
from agent.redact import is_secret_key

__all__ = ["CommandRejected", "Segment", "parse_command", "run_command", "run_for_plan", "scrubbed_env"]

_OPERATORS = ("&&", "||", "|", ";")
_FORBIDDEN_CHARS = {"<": "redirection '<'", ">": "redirection '>'", "&": "background '&'",
                    "(": "subshell '('", ")": "subshell ')'"}
_EXTRA_SECRET_SUFFIXES = ("_password", "_passwd", "_credentials")


class CommandRejected(ValueError):
    """The command line breaks a safety rule; the message says which."""


@dataclass
class Segment:
    """One command of a pipeline and the operator that joins it to the previous one."""

    argv: list[str]
    joiner: str = ";"          # how this segment connects to the previous: ";", "&&", "||" or "|"
    words_quoted: list[bool] = field(default_factory=list)


def scrubbed_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without secrets (`*_TOKEN`, `*_KEY`, `*_SECRET`, passwords)."""
    env = dict(os.environ if environ is None else environ)
    return {k: v for k, v in env.items()
            if not is_secret_key(k) and not k.lower().endswith(_EXTRA_SECRET_SUFFIXES)}


def _split_top(cmd: str) -> list[tuple[str, str]]:
    """Split on operators outside quotes: [(joiner, text)], first joiner ';'."""
    parts: list[tuple[str, str]] = []
    buf: list[str] = []
    joiner = ";"
    quote = ""
    i = 0
    while i < len(cmd):
        ch = cmd[i]
        if quote:
            buf.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < len(cmd):
                buf.append(cmd[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            buf.append(ch)
            i += 1
            continue
        if ch == "\\" and i + 1 < len(cmd):
            buf.append(cmd[i:i + 2])
            i += 2
            continue
        op = next((o for o in _OPERATORS if cmd.startswith(o, i)), None)
        if op:
            parts.append((joiner, "".join(buf)))
            buf, joiner = [], op
            i += len(op)
            continue
        if ch in _FORBIDDEN_CHARS:
            raise CommandRejected(f"command rejected: {_FORBIDDEN_CHARS[ch]} is not allowed")
        buf.append(ch)
        i += 1
    if quote:
        raise CommandRejected("command rejected: unterminated quote")
    parts.append((joiner, "".join(buf)))
    return parts


def parse_command(cmd: str, allow: Iterable[str]) -> list[Segment]:
    """Validate `cmd` and split it into segments; raises CommandRejected with the exact reason."""
    if not isinstance(cmd, str) or not cmd.strip():
        raise CommandRejected("command rejected: empty command")
    if "$(" in cmd:
        raise CommandRejected("command rejected: '$(' command substitution is not allowed")
    if "`" in cmd:
        raise CommandRejected("command rejected: backticks are not allowed")
    if "\n" in cmd or "\r" in cmd:
        raise CommandRejected("command rejected: newlines are not allowed")
    if "\x00" in cmd:
        raise CommandRejected("command rejected: NUL byte")
    allowed = set(allow)
    segments: list[Segment] = []
    for joiner, text in _split_top(cmd):
        try:
            lex = shlex.shlex(text, posix=True)
            lex.whitespace_split = True
            lex.commenters = ""
            words = list(lex)
        except ValueError as exc:
            raise CommandRejected(f"command rejected: {exc}") from exc
        if not words:
            raise CommandRejected(f"command rejected: empty segment near '{joiner}'")
        if words[0] not in allowed:
            raise CommandRejected(f"command rejected: '{words[0]}' is not an allowed command "
                                  f"(allowed: {', '.join(sorted(allowed))})")
        raw_words = text.split()
        quoted = [any(q in w for q in "'\"\\") for w in raw_words] if len(raw_words) == len(words) \
            else [True] * len(words)
        segments.append(Segment(words, joiner, quoted))
    return segments


def check_arguments(segments: list[Segment], root: str) -> None:
    """Every argument that names a path must stay inside the workspace.

    The allow-list decides which programs run; this decides what they may touch. A word (or the
    value after `=` in `--opt=value`) that is absolute, contains a `..` component, or names
    something existing under the root is resolved like any tool path: outside → rejected.
    """
    from agent.errors import PathRejected
    from agent.workspace import Workspace

    ws = Workspace(root)
    for seg in segments:
        for word in seg.argv[1:]:
            value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
            if not value or value.startswith("-") and "=" not in word:
                continue
            pathish = os.path.isabs(value) or ".." in value.split("/") or \
                os.path.lexists(os.path.join(root, value))
            if not pathish:
                continue
            try:
                ws.resolve(value)
            except PathRejected as exc:
                raise CommandRejected(f"command rejected: argument {word!r} leaves the workspace") from exc


def _expand(seg: Segment, root: str) -> list[str]:
    """Expand unquoted glob words against the workspace root; no match keeps the word (like sh)."""
    out = [seg.argv[0]]
    for word, quoted in zip(seg.argv[1:], seg.words_quoted[1:], strict=False):
        if not quoted and any(c in word for c in "*?[") and not os.path.isabs(word):
            matches = sorted(globmod.glob(word, root_dir=root))
            out.extend(matches or [word])
        else:
            out.append(word)
    return out


def _read_capped(fh: Any, cap: int) -> tuple[str, bool]:
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    fh.seek(0)
    data = fh.read(cap)
    return data.decode("utf-8", errors="replace"), size > cap


def run_command(cmd: str, *, root: str, allow: Iterable[str], timeout_s: float,
                output_cap: int) -> dict[str, Any]:
    """Run a validated command line under `root`, inside the OS sandbox; exit code, capped output, flags.

    All processes of one call share a `CommandBox` (one private /tmp); at the timeout, or when
    the call ends, everything they started is killed. Raises CommandRejected, SandboxUnavailable.
    """
    from agent.sandbox.spawn import CommandBox, wait_for

    segments = parse_command(cmd, allow)
    check_arguments(segments, root)
    env = scrubbed_env()
    deadline = time.monotonic() + max(0.0, timeout_s)
    exit_code = 0
    timed_out = False
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f, \
            CommandBox(root, what="tools.run") as box:
        i = 0
        while i < len(segments):
            pipeline = [segments[i]]
            while i + len(pipeline) < len(segments) and segments[i + len(pipeline)].joiner == "|":
                pipeline.append(segments[i + len(pipeline)])
            joiner = segments[i].joiner
            i += len(pipeline)
            if (joiner == "&&" and exit_code != 0) or (joiner == "||" and exit_code == 0):
                continue
            procs: list[subprocess.Popen[bytes]] = []
            prev_out: Any = subprocess.DEVNULL
            for k, seg in enumerate(pipeline):
                last = k == len(pipeline) - 1
                proc = box.popen(_expand(seg, root), env=env, stdin=prev_out,
                                 stdout=out_f if last else subprocess.PIPE, stderr=err_f)
                if prev_out is not subprocess.DEVNULL:
                    prev_out.close()  # the child holds its own copy now
                prev_out = proc.stdout if not last else None
                procs.append(proc)
            for p in procs:
                if not wait_for(p, deadline - time.monotonic()):
                    timed_out = True
                    break
            if timed_out:
                box.kill()
                exit_code = -9
                break
            exit_code = procs[-1].returncode
        box.close()
        stdout, out_trunc = _read_capped(out_f, output_cap)
        stderr, err_trunc = _read_capped(err_f, output_cap)
    return {"exit_code": exit_code, "stdout": stdout, "stderr": stderr, "timed_out": timed_out,
            "truncated": out_trunc or err_trunc}


def run_for_plan(cmd: str, *, root: str, allow: Iterable[str], timeout_s: float) -> dict[str, Any]:
    """`tools.run` on the agent's side: the result, or `{error, code}` for the plan."""
    from agent.plans.limits import RUN_OUTPUT_BYTES

    try:
        return run_command(cmd, root=root, allow=allow, timeout_s=timeout_s, output_cap=RUN_OUTPUT_BYTES)
    except CommandRejected as exc:
        return {"error": str(exc), "code": "command_rejected"}
    except SandboxUnavailable as exc:
        return {"error": exc.message, "code": exc.code}
    except OSError as exc:
        return {"error": f"run: {exc.strerror or exc}", "code": "os_error"}
