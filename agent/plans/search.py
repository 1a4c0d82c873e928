"""Fast content search for `tools.grep`: ripgrep as a candidate generator, the walk as the judge.

ripgrep (the `ripgrep` wheel ships the `rg` binary) searches a large tree in a fraction of the
time a Python loop needs. It is only trusted to *find* lines: every hit is kept only if the same
rules as everywhere else accept its path (the ignore-aware walk, the glob matcher, the workspace
path policy), so rg and the Python fallback can differ only in what they skip (rg also skips
binary files and does not follow links), never in what they may show.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import orjson

from agent.walk import BOOKKEEPING_DIRS

__all__ = ["ripgrep_binary", "ripgrep_lines"]


@cache
def ripgrep_binary() -> str | None:
    """Path of `rg`: next to this Python's scripts first (the wheel), then PATH; None when absent
    or turned off with LUALLM_AGENT_RIPGREP=0."""
    if os.environ.get("LUALLM_AGENT_RIPGREP") == "0":
        return None
    candidates = [os.path.join(sysconfig.get_path("scripts"), "rg"),
                  os.path.join(os.path.dirname(sys.executable), "rg")]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("rg")


def _argv(rg: str, root: str, query: str, literal: bool, file_cap: int) -> list[str]:
    argv = [rg, "--json", "--no-config", "--no-require-git", "--sort", "path", "--max-filesize", str(file_cap),
            "--max-columns", "4096"]
    if os.path.isfile(os.path.join(root, ".luallmignore")):
        argv += ["--ignore-file", ".luallmignore"]
    for name in sorted(BOOKKEEPING_DIRS):
        argv += ["--glob", f"!/{name}/"]
    argv += ["--fixed-strings"] if literal else []
    return [*argv, "--regexp", query, "."]


def ripgrep_lines(root: str, query: str, *, literal: bool, file_cap: int,
                  accept: Callable[[str], bool], limit: int, text_cap: int,
                  timeout_s: float) -> list[dict[str, Any]] | None:
    """Matching lines as `{path, line, text}`, or None when rg is absent or cannot run the query."""
    rg = ripgrep_binary()
    if rg is None:
        return None
    try:
        proc = subprocess.Popen(_argv(rg, root, query, literal, file_cap), cwd=root, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError:
        return None
    out: list[dict[str, Any]] = []
    try:
        assert proc.stdout is not None
        for hit in _hits(proc.stdout):
            if not accept(hit["path"]):
                continue
            hit["text"] = hit["text"][:text_cap]
            out.append(hit)
            if len(out) >= limit:
                break
    finally:
        proc.kill()
        try:
            _, err = proc.communicate(timeout=max(0.1, timeout_s))
        except subprocess.TimeoutExpired:
            err = b""
    if proc.returncode == 2 and not out and b"regex" in err:
        return None  # rg's regex dialect refused it: the caller falls back
    return out


def _hits(stream: Any) -> Iterator[dict[str, Any]]:
    for raw in stream:
        try:
            msg = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if msg.get("type") != "match":
            continue
        data = msg.get("data") or {}
        path = (data.get("path") or {}).get("text")
        text = (data.get("lines") or {}).get("text")
        if not isinstance(path, str) or not isinstance(text, str):
            continue  # non-UTF-8 names or lines come as bytes: skip, like the walk's decoder would not
        yield {"path": path[2:] if path.startswith("./") else path, "line": int(data.get("line_number") or 0),
               "text": text.rstrip("\r\n")}
