"""The only place that decides whether a path is allowed, and the only writer of files.

Every path from a command, a model answer or a plan tool is resolved inside the workspace root:
absolute paths outside it, `..` escapes and symlinks that lead out (including a symlinked parent
directory of a file that does not exist yet) are rejected. Writes are atomic: a temp file in the
same directory, fsync, rename, directory fsync; files 0600, new directories 0700.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent.errors import ArtifactWriteFailed, PathRejected, ShuttingDown
from agent.walk import BOOKKEEPING_DIRS

if TYPE_CHECKING:
    from agent.walk import IgnoreRules
    from agent.workspace_state import DigestState

__all__ = [
    "Artifact", "Workspace", "sanitize_id", "sha256_bytes", "remove_pending_temps", "begin_shutdown",
    "make_private_dirs",
    "DIGEST_EXCLUDES", "AGENT_DIR",
]

# Directories that hold the agent's or lorch's own bookkeeping, not the files a role reads.
DIGEST_EXCLUDES = BOOKKEEPING_DIRS
# What the agent itself keeps in the workspace (audit log, plan runs, spilled payloads).
AGENT_DIR = "logs/luallm-agent"

_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]")
_pending_lock = threading.Lock()
_pending_temps: set[str] = set()
_closing = False


def sha256_bytes(data: bytes) -> str:
    """`sha256:<64 hex>` of `data`, the checksum format lorch expects."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def sanitize_id(raw: str, max_len: int = 80) -> str:
    """Make an opaque id (task id, action) safe as one file-name component.

    Unsafe characters become `_`, leading dots are dropped; when anything changed a short hash of
    the original is appended so that two different ids never share a directory.
    """
    cleaned = _SAFE_ID.sub("_", raw).lstrip(".")[:max_len]
    if cleaned == raw and cleaned:
        return cleaned
    suffix = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned or 'id'}-{suffix}"


def begin_shutdown() -> int:
    """Refuse new writes from now on and delete temp files of writes in flight; returns how many."""
    global _closing
    with _pending_lock:
        _closing = True
    return remove_pending_temps()


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


def remove_pending_temps() -> int:
    """Delete temp files of writes still in flight (used at shutdown); returns how many."""
    with _pending_lock:
        paths = list(_pending_temps)
        _pending_temps.clear()
    removed = 0
    for p in paths:
        try:
            os.unlink(p)
            removed += 1
        except OSError:
            pass
    return removed


@dataclass(frozen=True)
class Artifact:
    """A file the agent wrote: workspace-relative path, `sha256:<hex>` and size in bytes."""

    path: str
    sha256: str
    size: int

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "sha256": self.sha256, "size": self.size}


class Workspace:
    """A workspace root with safe path resolution, atomic writes and a content digest."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise NotADirectoryError(f"workspace is not a directory: {root}")
        self.root = Path(real)
        self._state: DigestState | None = None
        self._rules: IgnoreRules | None = None

    # -- paths -------------------------------------------------------------------------------
    def resolve(self, rel: str) -> Path:
        """Absolute real path for `rel`, or PathRejected if it would leave the workspace."""
        if not isinstance(rel, str) or not rel.strip():
            raise PathRejected("empty path", path=str(rel))
        if "\x00" in rel:
            raise PathRejected("path contains a NUL byte", path=rel.replace("\x00", "\\0"))
        candidate = rel if os.path.isabs(rel) else os.path.join(self.root, rel)
        # realpath (non-strict) follows every symlink that exists, including a symlinked parent
        # of a file not yet created and a dangling final link, then applies `..` to the result.
        real = os.path.realpath(candidate)
        if not self._inside(real):
            raise PathRejected(f"path escapes the workspace: {rel}", path=rel)
        return Path(real)

    def _inside(self, real: str) -> bool:
        root = str(self.root)
        return real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    def relpath(self, path: str | os.PathLike[str]) -> str:
        """Workspace-relative POSIX path of an absolute path inside the root."""
        return Path(os.path.relpath(os.fspath(path), self.root)).as_posix()

    def exists(self, rel: str) -> bool:
        try:
            return self.resolve(rel).exists()
        except PathRejected:
            return False

    # -- reading -----------------------------------------------------------------------------
    def read_bytes(self, rel: str, max_bytes: int | None = None) -> bytes:
        """Read a file inside the workspace (at most `max_bytes` when given)."""
        path = self.resolve(rel)
        with open(path, "rb") as fh:
            return fh.read() if max_bytes is None else fh.read(max_bytes)

    def read_text(self, rel: str, max_bytes: int | None = None) -> str:
        return self.read_bytes(rel, max_bytes).decode("utf-8", errors="replace")

    def checksum(self, rel: str) -> Artifact | None:
        """The artifact record of an existing file, or None when it is missing or unsafe."""
        try:
            data = self.read_bytes(rel)
        except (OSError, PathRejected):
            return None
        return Artifact(rel, sha256_bytes(data), len(data))

    # -- writing -----------------------------------------------------------------------------
    def write_atomic(self, rel: str, data: bytes | str) -> Artifact:
        """Atomically write `data` to `rel` (0600, parents 0700) and return its artifact record."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        target = self.resolve(rel)
        if target == self.root or target.is_dir():
            raise PathRejected(f"not a file path: {rel}", path=rel)
        try:
            self._make_dirs(target.parent)
            # Re-check after creating directories: a racing symlink must not redirect the write.
            if os.path.realpath(target.parent) != str(target.parent):
                raise PathRejected(f"parent directory changed while writing: {rel}", path=rel)
            tmp = target.parent / f".{target.name}.tmp.{os.getpid()}.{secrets.token_hex(4)}"
            with _pending_lock:
                if _closing:
                    raise ShuttingDown(f"not writing {rel}: the agent is stopping", path=rel)
                _pending_temps.add(str(tmp))
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
                try:
                    os.fchmod(fd, 0o600)
                    view = memoryview(raw)
                    while view:
                        view = view[os.write(fd, view):]
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, target)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            finally:
                with _pending_lock:
                    _pending_temps.discard(str(tmp))
            _fsync_dir(target.parent)
        except (PathRejected, ShuttingDown):
            raise
        except OSError as exc:
            raise ArtifactWriteFailed(f"cannot write {rel}: {exc.strerror or exc}", path=rel) from exc
        return Artifact(self.relpath(target), sha256_bytes(raw), len(raw))

    def _make_dirs(self, directory: Path) -> None:
        for new in make_private_dirs(directory):
            if not self._inside(os.path.realpath(new)):
                raise PathRejected(f"directory escapes the workspace: {self.relpath(new)}")

    def create_exclusive(self, rel: str, data: bytes | str) -> Artifact:
        """Like write_atomic but fails if the file already exists."""
        if self.resolve(rel).exists():
            raise ArtifactWriteFailed(f"file already exists: {rel}", path=rel)
        return self.write_atomic(rel, data)

    # -- digest ------------------------------------------------------------------------------
    def iter_files(self, excludes: Iterable[str] = DIGEST_EXCLUDES) -> Iterator[str]:
        """The project's own files (see `agent.walk`): no dot-names, bookkeeping or ignored files."""
        from agent.walk import walk_files

        return walk_files(str(self.root), self.ignore_rules(), excludes=excludes)

    def listing(self, max_lines: int = 200) -> list[str]:
        """The project's own files for a prompt, big directories folded to stay within `max_lines`."""
        from agent.walk import summarize_listing

        return summarize_listing(list(self.iter_files()), max_lines)

    def ignore_rules(self) -> IgnoreRules:
        from agent.walk import IgnoreRules

        if self._rules is None:
            self._rules = IgnoreRules(str(self.root))
        return self._rules

    def digest(self) -> str:
        """Digest of the files a role may read; O(changes) in a long-lived process (inotify)."""
        if self._state is None:
            from agent.workspace_state import DigestState

            self._state = DigestState(str(self.root))
        return self._state.digest()


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
