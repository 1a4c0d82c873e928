"""Lexical normalising of workspace paths: the one form every policy rule and file access judges.

`.` and `..` are folded and absolute paths inside the root made relative without touching the
disk; this is exact because no symlink is ever followed when the path is used
(`agent.workspace_open`). Anything that would leave the root, or that the kernel could not name
(a NUL, a component over NAME_MAX, a path over PATH_MAX), is `path_rejected` here.
"""

from __future__ import annotations

import os

from agent.errors import PathRejected

__all__ = ["normalize_path"]

_NAME_MAX = 255          # bytes in one path component (Linux NAME_MAX)
_PATH_MAX = 4095         # bytes in a whole path


def normalize_path(rel: str, spellings: list[str]) -> str:
    """The workspace-relative POSIX form of `rel` ("" for the root), or PathRejected.

    `spellings` are the root's absolute spellings, longest first (its real path and the path it
    was given as), so an absolute path written either way is recognised as inside.
    """
    if not isinstance(rel, str) or not rel.strip():
        raise PathRejected("empty path", path=str(rel), reason="empty")
    if "\x00" in rel:
        raise PathRejected("path contains a NUL byte", path=rel.replace("\x00", "\\0"), reason="nul")
    shown = rel if len(rel) <= 300 else rel[:300] + "…"
    if len(rel.encode("utf-8", "surrogateescape")) > _PATH_MAX:
        raise PathRejected(f"path longer than {_PATH_MAX} bytes: {shown}", path=shown, reason="name_too_long")
    if os.path.isabs(rel):
        rel = _strip_root(rel, shown, spellings)
    parts: list[str] = []
    for comp in rel.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if not parts:
                raise PathRejected(f"path escapes the workspace: {shown}", path=shown, reason="outside")
            parts.pop()
            continue
        if len(comp.encode("utf-8", "surrogateescape")) > _NAME_MAX:
            raise PathRejected(f"path component longer than {_NAME_MAX} bytes: {comp[:40]}…", path=shown,
                               reason="name_too_long")
        parts.append(comp)
    return "/".join(parts)


def _strip_root(absolute: str, shown: str, spellings: list[str]) -> str:
    norm = os.path.normpath(absolute)
    for base in spellings:
        if norm == base:
            return ""
        if norm.startswith(base.rstrip(os.sep) + os.sep):
            return norm[len(base.rstrip(os.sep)) + 1:]
    raise PathRejected(f"path escapes the workspace: {shown}", path=shown, reason="outside")
