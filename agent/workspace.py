"""The only place that decides whether a path is allowed, and the only writer of files.

Every path from a command, a model answer or a plan tool is normalised (`agent.workspace_paths`:
`.`/`..` folded inside the root, absolute paths inside the root made relative; anything that would
leave the root is `path_rejected`) and judged by a `PathPolicy` (`agent.pathpolicy`) on that
normalised form.

Files are then opened race-free (`agent.workspace_open`): from a directory fd of the root, one
component at a time with `O_NOFOLLOW|O_DIRECTORY`, the file itself opened `O_NOFOLLOW`, so no
symlink is ever followed. Writes are atomic (`agent.workspace_write`): temp file, fsync, rename
within the directory fd, directory fsync; a rewritten file keeps its permission bits, new files
are 0600.

Writes whose content carries a known secret value are refused (`secret_in_artifact`): artifacts
are written exactly as asked, or not at all.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent.errors import AgentError, ArtifactWriteFailed, PathRejected, SecretInArtifact
from agent.pathpolicy import AGENT, AGENT_DIR, BOOKKEEPING_DIRS, MODEL, PathPolicy
from agent.workspace_open import lstat_existing, lstat_key, open_dir, read_error, symlink_rejected
from agent.workspace_paths import normalize_path
from agent.workspace_write import write_error, write_in

if TYPE_CHECKING:
    from agent.walk import IgnoreRules
    from agent.workspace_state import DigestState

__all__ = [
    "Artifact", "Workspace", "sanitize_id", "sha256_bytes", "SecretSource", "DIGEST_EXCLUDES", "AGENT_DIR",
]

# Directories that hold the agent's or lorch's bookkeeping, not the files a role reads.
DIGEST_EXCLUDES = BOOKKEEPING_DIRS
# The values whose presence refuses a write: a fixed list, or a callable read at each write
# (the runtime's redactor learns secrets from command inputs as they arrive).
SecretSource = Callable[[], Iterable[str]] | Iterable[str]

_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]")
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # NONBLOCK: a FIFO never hangs us


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


@dataclass(frozen=True)
class Artifact:
    """A file the agent wrote: workspace-relative path, `sha256:<hex>` and size in bytes."""

    path: str
    sha256: str
    size: int

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "sha256": self.sha256, "size": self.size}


class Workspace:
    """A workspace root with one path policy, race-free file access and a content digest."""

    def __init__(self, root: str | os.PathLike[str], *, secret_values: SecretSource = ()) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise NotADirectoryError(f"workspace is not a directory: {root}")
        self.root = Path(real)
        self._spellings = sorted({real, os.path.abspath(os.fspath(root))}, key=len, reverse=True)
        self._secrets = secret_values
        self._state: DigestState | None = None
        self._rules: IgnoreRules | None = None

    # -- paths -------------------------------------------------------------------------------
    def normalize(self, rel: str) -> str:
        """The workspace-relative POSIX form of `rel` ("" for the root), or PathRejected.

        Purely lexical: `.` and `..` are folded, which is exact because no symlink is ever
        followed when the path is used.
        """
        return normalize_path(rel, self._spellings)

    def relpath(self, path: str | os.PathLike[str]) -> str:
        """Workspace-relative POSIX path of an absolute path inside the root."""
        return Path(os.path.relpath(os.fspath(path), self.root)).as_posix()

    def resolve(self, rel: str, *, policy: PathPolicy = MODEL, write: bool = True) -> Path:
        """Absolute path of `rel` for handing to another program (a command's argument).

        Normalised, judged by `policy` (as a write unless `write=False`: an argument may be an
        output), and no existing component may be a symlink. The agent's own file access never
        goes through a path string: it uses the race-free fd operations below.
        """
        key = self._judge(rel, policy, write)
        if key:
            lstat_existing(self.root, key.split("/"), rel)
        return self.root / key if key else self.root

    def check_write(self, rel: str, data: bytes | str, *, policy: PathPolicy = MODEL) -> str:
        """Everything `write_atomic` would refuse before touching the disk: path, policy, symlinks
        along the existing part of the path, secrets in `data`. Returns the normalised path.

        Used to refuse a model's answer while it can still be repaired.
        """
        key = self._judge(rel, policy, True)
        if not key:
            raise PathRejected(f"not a file path: {rel}", path=rel, reason="not_a_file")
        lstat_existing(self.root, key.split("/"), rel)
        self.guard_content(key, data.encode("utf-8") if isinstance(data, str) else data)
        return key

    def _judge(self, rel: str, policy: PathPolicy, write: bool) -> str:
        key = self.normalize(rel)
        shown = rel if len(rel) <= 300 else key
        if write:
            policy.check_write(key, shown)
        else:
            policy.check_read(key, shown)
        return key

    # -- secrets -----------------------------------------------------------------------------
    def secret_values(self) -> list[str]:
        """The secret values currently known (for handing to the plan worker in its request)."""
        source = self._secrets() if callable(self._secrets) else self._secrets
        return [v for v in source if v]

    def guard_content(self, rel: str, data: bytes) -> None:
        """Refuse `data` that contains a known secret value (the message never shows it)."""
        for value in self.secret_values():
            if value.encode("utf-8", "surrogateescape") in data:
                raise SecretInArtifact(
                    f"{rel}: the content contains the value of a secret (an environment variable or input "
                    "named *_TOKEN, *_KEY or *_SECRET, or the API key); write it without the secret, e.g. "
                    "read it from the environment at run time", path=rel)

    # -- race-free access ---------------------------------------------------------------------
    def _open_dir(self, parts: list[str], rel: str, *, create: bool) -> int:
        return open_dir(self.root, parts, rel, create=create)

    def _lstat(self, rel: str, policy: PathPolicy) -> os.stat_result:
        return lstat_key(self.root, self._judge(rel, policy, False), rel)

    def lstat(self, rel: str, *, policy: PathPolicy = AGENT) -> os.stat_result:
        """`lstat` of `rel` reached without following links; PathRejected for a symlink."""
        try:
            return self._lstat(rel, policy)
        except (FileNotFoundError, AgentError):
            raise
        except OSError as exc:
            raise read_error(rel, exc) from None

    def exists(self, rel: str, *, policy: PathPolicy = AGENT) -> bool:
        """True for an existing file or directory that policy and the no-symlink rule allow."""
        try:
            self._lstat(rel, policy)
            return True
        except (OSError, AgentError):
            return False

    def is_file(self, rel: str, *, policy: PathPolicy = AGENT) -> bool:
        try:
            return stat.S_ISREG(self._lstat(rel, policy).st_mode)
        except (OSError, AgentError):
            return False

    def listdir(self, rel: str = ".", *, policy: PathPolicy = AGENT) -> list[tuple[str, bool]]:
        """Sorted `(name, is_directory)` entries of a directory; links count as files."""
        key = self._judge(rel, policy, False)
        try:
            fd = self._open_dir(key.split("/") if key else [], rel, create=False)
        except (FileNotFoundError, AgentError):
            raise
        except OSError as exc:
            raise read_error(rel, exc) from None
        try:
            with os.scandir(fd) as it:
                return sorted((e.name, e.is_dir(follow_symlinks=False)) for e in it)
        finally:
            os.close(fd)

    # -- reading -----------------------------------------------------------------------------
    def read_bytes(self, rel: str, max_bytes: int | None = None, *, policy: PathPolicy = AGENT) -> bytes:
        """Read a regular file inside the workspace (at most `max_bytes` when given).

        Raises FileNotFoundError, IsADirectoryError, PathRejected (policy, symlink, not a regular
        file) or FileUnreadable.
        """
        key = self._judge(rel, policy, False)
        if not key:
            raise IsADirectoryError(errno.EISDIR, "is a directory", rel)
        parts = key.split("/")
        try:
            dir_fd = self._open_dir(parts[:-1], rel, create=False)
            try:
                fd = os.open(parts[-1], _READ_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise symlink_rejected(key, rel) from None
                raise
            finally:
                os.close(dir_fd)
            with os.fdopen(fd, "rb") as fh:
                mode = os.fstat(fh.fileno()).st_mode
                if stat.S_ISDIR(mode):
                    raise IsADirectoryError(errno.EISDIR, "is a directory", rel)
                if not stat.S_ISREG(mode):
                    raise PathRejected(f"{rel}: not a regular file", path=rel, reason="not_a_file")
                return fh.read() if max_bytes is None else fh.read(max_bytes)
        except (FileNotFoundError, IsADirectoryError, AgentError):
            raise
        except OSError as exc:
            raise read_error(rel, exc) from None

    def read_text(self, rel: str, max_bytes: int | None = None, *, policy: PathPolicy = AGENT) -> str:
        return self.read_bytes(rel, max_bytes, policy=policy).decode("utf-8", errors="replace")

    def checksum(self, rel: str) -> Artifact | None:
        """The artifact record of an existing file, or None when it is missing or unsafe."""
        try:
            data = self.read_bytes(rel)
        except (OSError, AgentError):
            return None
        return Artifact(rel, sha256_bytes(data), len(data))

    # -- writing -----------------------------------------------------------------------------
    def write_atomic(self, rel: str, data: bytes | str, *, policy: PathPolicy = MODEL,
                     exclusive: bool = False) -> Artifact:
        """Atomically write `data` to `rel` and return its artifact record.

        `policy` says who writes (the model by default; the agent's own files pass `AGENT`).
        An existing file keeps its permission bits, a new one is 0600, new directories 0700.
        `exclusive=True` raises FileExistsError instead of replacing an existing file.
        """
        raw = data.encode("utf-8") if isinstance(data, str) else data
        key = self._judge(rel, policy, True)
        if not key:
            raise PathRejected(f"not a file path: {rel}", path=rel, reason="not_a_file")
        self.guard_content(key, raw)
        parts = key.split("/")
        try:
            dir_fd = self._open_dir(parts[:-1], rel, create=True)
            try:
                write_in(dir_fd, parts[-1], raw, key, rel, exclusive)
            finally:
                os.close(dir_fd)
        except AgentError:
            raise
        except FileExistsError:
            if exclusive:
                raise
            raise write_error(rel, FileExistsError(errno.EEXIST, "file exists")) from None
        except OSError as exc:
            raise write_error(rel, exc) from None
        return Artifact(key, sha256_bytes(raw), len(raw))

    def append(self, rel: str, data: bytes, *, policy: PathPolicy = AGENT) -> None:
        """Append to a log file (created 0600) reached without following links: the audit log."""
        key = self._judge(rel, policy, True)
        parts = key.split("/")
        try:
            dir_fd = self._open_dir(parts[:-1], rel, create=True)
            try:
                fd = os.open(parts[-1], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600, dir_fd=dir_fd)
            finally:
                os.close(dir_fd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        except AgentError:
            raise
        except OSError as exc:
            raise write_error(rel, exc) from None

    def rename(self, src: str, dst: str, *, policy: PathPolicy = AGENT) -> None:
        """Rename within the workspace (log rotation); neither side's directories are followed."""
        a, b = self._judge(src, policy, True).split("/"), self._judge(dst, policy, True).split("/")
        try:
            src_fd = self._open_dir(a[:-1], src, create=False)
            try:
                dst_fd = self._open_dir(b[:-1], dst, create=True)
                try:
                    os.replace(a[-1], b[-1], src_dir_fd=src_fd, dst_dir_fd=dst_fd)
                finally:
                    os.close(dst_fd)
            finally:
                os.close(src_fd)
        except (AgentError, FileNotFoundError):
            raise
        except OSError as exc:
            raise write_error(dst, exc) from None

    def remove(self, rel: str, *, policy: PathPolicy = AGENT) -> None:
        """Remove a regular file reached without following links (a test file the command added, taken out)."""
        parts = self._judge(rel, policy, True).split("/")
        try:
            dir_fd = self._open_dir(parts[:-1], rel, create=False)
            try:
                if not stat.S_ISREG(os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False).st_mode):
                    raise PathRejected(f"not a file path: {rel}", path=rel, reason="not_a_file")
                os.unlink(parts[-1], dir_fd=dir_fd)
            finally:
                os.close(dir_fd)
        except (AgentError, FileNotFoundError):
            raise
        except OSError as exc:
            raise write_error(rel, exc) from None

    def create_exclusive(self, rel: str, data: bytes | str, *, policy: PathPolicy = MODEL) -> Artifact:
        """Like write_atomic but fails (artifact_write_failed) if the file already exists."""
        try:
            return self.write_atomic(rel, data, policy=policy, exclusive=True)
        except FileExistsError:
            raise ArtifactWriteFailed(f"file already exists: {rel}", path=rel, reason="EEXIST") from None

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
