"""Leftovers of a killed agent: temp files of its atomic writes, and its commands' private temp dirs.

A write goes through `.<name>.tmp.<pid>.<rand>` next to its target; an agent killed mid-write
leaves that file behind. A restarted agent removes the ones whose pid is no longer alive (a live
pid may be another agent serving the same workspace, so its files are left alone), and the
`luallm-sbx-<pid>-*` temp dirs of commands whose agent is gone.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

__all__ = ["remove_stale_temps", "remove_stale_sandbox_dirs", "TEMP_NAME"]

TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.tmp\.(?P<pid>\d+)\.(?P<rand>[A-Za-z0-9_-]+)$")
_SANDBOX_DIR = re.compile(r"^luallm-sbx-(?P<pid>\d+)-")
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules"}
_MAX_ENTRIES = 200_000  # a huge tree is walked only this far: start-up must stay quick


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True   # someone else's process: not ours to judge
    return True


def remove_stale_temps(root: Path) -> list[str]:
    """Delete `.<name>.tmp.<pid>.<rand>` files under `root` whose pid is dead; their relative paths."""
    removed: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        seen += len(dirnames) + len(filenames)
        for name in filenames:
            m = TEMP_NAME.match(name)
            if m is None or _alive(int(m.group("pid"))):
                continue
            path = os.path.join(dirpath, name)
            try:
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                os.unlink(path)
            except OSError:
                continue
            removed.append(os.path.relpath(path, root))
        if seen > _MAX_ENTRIES:
            break
    return removed


def remove_stale_sandbox_dirs(tmp: str | None = None) -> int:
    """Delete private temp dirs of commands whose agent (named in the dir) is gone; how many."""
    base = tmp or tempfile.gettempdir()
    count = 0
    try:
        names = os.listdir(base)
    except OSError:
        return 0
    for name in names:
        m = _SANDBOX_DIR.match(name)
        if m is None or _alive(int(m.group("pid"))):
            continue
        path = os.path.join(base, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
            count += 1
    return count
