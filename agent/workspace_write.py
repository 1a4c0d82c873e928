"""Atomic, crash-safe file writes inside an already opened directory, and their clean-up at shutdown.

A write goes to a temp file created in the directory fd, is fsynced, renamed over the target
within the same fd (`renameat`), and the directory is fsynced: a reader sees the old file or the
new one, never half of it. A rewritten file keeps its permission bits; new files are 0600.

Temp files of writes in flight are tracked so that a stopping agent can delete them and refuse
new writes (`begin_shutdown`), leaving no `.tmp` litter in the user's project.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import threading
from pathlib import Path

from agent.errors import AgentError, ArtifactWriteFailed, PathRejected, ShuttingDown
from agent.workspace_open import errno_name, path_error, symlink_rejected

__all__ = ["write_in", "write_error", "begin_shutdown", "remove_pending_temps", "make_private_dirs"]

_TEMP_STEM = 180         # keeps `.<name>.tmp.<pid>.<rand>` under NAME_MAX
_pending_lock = threading.Lock()
_pending_temps: dict[object, tuple[int, str]] = {}   # token → (directory fd, temp name) of writes in flight
_closing = False


def begin_shutdown() -> int:
    """Refuse new writes from now on and delete temp files of writes in flight; returns how many."""
    global _closing
    with _pending_lock:
        _closing = True
    return remove_pending_temps()


def remove_pending_temps() -> int:
    """Delete temp files of writes still in flight (used at shutdown); returns how many."""
    removed = 0
    # Unlink under the lock: a writer closes its directory fd only after taking its entry out.
    with _pending_lock:
        for dir_fd, name in _pending_temps.values():
            try:
                os.unlink(name, dir_fd=dir_fd)
                removed += 1
            except OSError:
                pass
        _pending_temps.clear()
    return removed


def make_private_dirs(directory: Path) -> list[Path]:
    """Create missing directories (and parents) with mode 0700 whatever the umask; returns them."""
    missing: list[Path] = []
    d = directory
    while not d.exists():
        missing.append(d)
        d = d.parent
    for new in reversed(missing):
        try:
            os.mkdir(new, 0o700)
            os.chmod(new, 0o700)
        except FileExistsError:
            pass
    return list(reversed(missing))


def write_in(dir_fd: int, name: str, raw: bytes, key: str, rel: str, exclusive: bool) -> None:
    """Atomically write `raw` as `name` in the directory `dir_fd` (`key` is its normalised path).

    `exclusive=True` raises FileExistsError instead of replacing an existing file.
    """
    try:
        old = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None:
        if stat.S_ISLNK(old.st_mode):
            raise symlink_rejected(key, rel)
        if not stat.S_ISREG(old.st_mode):
            raise PathRejected(f"not a file path: {rel}", path=rel, reason="not_a_file")
        if exclusive:
            raise FileExistsError(errno.EEXIST, "file already exists", rel)
    mode = stat.S_IMODE(old.st_mode) & 0o777 if old is not None else 0o600
    tmp = f".{name[:_TEMP_STEM]}.tmp.{os.getpid()}.{secrets.token_hex(4)}"
    token = object()
    with _pending_lock:
        if _closing:
            raise ShuttingDown(f"not writing {rel}: the agent is stopping", path=rel)
        _pending_temps[token] = (dir_fd, tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=dir_fd)
        try:
            os.fchmod(fd, mode)  # the old file's bits (an executable stays executable), else 0600
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            os.unlink(tmp, dir_fd=dir_fd)
        else:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    finally:
        with _pending_lock:
            _pending_temps.pop(token, None)
    try:
        os.fsync(dir_fd)
    except OSError:
        pass  # some file systems cannot fsync a directory; the rename is still atomic


def write_error(rel: str, exc: OSError) -> AgentError:
    """Every OS error of a write as a precise code: the path's fault, or the disk's/permissions'."""
    if _closing:
        return ShuttingDown(f"not writing {rel}: the agent is stopping", path=rel)
    if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR):
        return path_error(rel, exc)
    return ArtifactWriteFailed(f"cannot write {rel}: {exc.strerror or exc}", path=rel, reason=errno_name(exc))
