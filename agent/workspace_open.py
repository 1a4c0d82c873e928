"""Race-free opening of workspace directories: one `O_NOFOLLOW` component at a time from the root.

No symlink is ever followed, not even one that stays inside, so a directory swapped for a link to
the outside while the agent works makes the access fail with `path_rejected` naming the component
instead of landing outside. Missing directories are made here (`mkdirat`, 0700) when asked.

The OS errors that say the path itself is unusable are turned into `path_rejected` here too, so
the reader and the writer report them alike.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from agent.errors import AgentError, FileUnreadable, PathRejected

__all__ = ["open_dir", "lstat_existing", "lstat_key", "symlink_rejected", "path_error", "read_error", "errno_name"]

_STEP_TRIES = 4          # a component that keeps changing while we open it is refused after this
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_dir(root: Path, parts: list[str], rel: str, *, create: bool) -> int:
    """A directory fd for `parts` below `root`, one `O_NOFOLLOW` step at a time."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, name in enumerate(parts):
            nxt = _step(fd, name, "/".join(parts[:i + 1]), rel, create)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _step(dir_fd: int, name: str, walked: str, rel: str, create: bool) -> int:
    """Open one directory component without following it; make it (0700) when missing."""
    for _ in range(_STEP_TRIES):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(name, 0o700, dir_fd=dir_fd)
            except FileExistsError:
                continue  # someone was first: look again at what is there now
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError:
                continue  # swapped right after we made it: look again
            os.fchmod(fd, 0o700)  # whatever the umask
            return fd
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            # O_NOFOLLOW|O_DIRECTORY refused it: a symlink (ELOOP or ENOTDIR) or a file.
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                raise symlink_rejected(walked, rel) from None
            if not stat.S_ISDIR(st.st_mode):
                raise PathRejected(f"{rel}: {walked} is not a directory", path=rel, reason="not_a_directory",
                                   component=walked) from None
            # A link or a file a moment ago, a directory now: someone is swapping it. Look again.
    raise PathRejected(f"{rel}: {walked} kept changing (directory / link / file) while being opened",
                       path=rel, reason="unstable", component=walked)


def lstat_existing(root: Path, parts: list[str], rel: str) -> None:
    """PathRejected if an existing component of `parts` is a symlink (or a file mid-path)."""
    try:
        fd = open_dir(root, parts[:-1], rel, create=False)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise path_error(rel, exc) from None
    try:
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
    except OSError:
        return
    finally:
        os.close(fd)
    if stat.S_ISLNK(st.st_mode):
        raise symlink_rejected("/".join(parts), rel)


def lstat_key(root: Path, key: str, rel: str) -> os.stat_result:
    """`lstat` of the normalised path `key` ("" for the root) reached without following links."""
    if not key:
        return os.stat(root)
    parts = key.split("/")
    fd = open_dir(root, parts[:-1], rel, create=False)
    try:
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(fd)
    if stat.S_ISLNK(st.st_mode):
        raise symlink_rejected(key, rel)
    return st


# -- errors -------------------------------------------------------------------------------------
def symlink_rejected(component: str, rel: str) -> PathRejected:
    return PathRejected(f"{rel}: {component} is a symbolic link; the agent follows no links in the workspace",
                        path=rel, reason="symlink", component=component)


def errno_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, "OSError")


def path_error(rel: str, exc: OSError) -> AgentError:
    """OS errors that say the path itself is unusable → path_rejected with the reason."""
    if exc.errno == errno.ENAMETOOLONG:
        return PathRejected(f"{rel}: name too long", path=rel, reason="name_too_long")
    if exc.errno == errno.ELOOP:
        return PathRejected(f"{rel}: a component is a symbolic link", path=rel, reason="symlink")
    if exc.errno == errno.ENOTDIR:
        return PathRejected(f"{rel}: a component is not a directory", path=rel, reason="not_a_directory")
    return FileUnreadable(f"cannot access {rel}: {exc.strerror or exc}", path=rel, reason=errno_name(exc))


def read_error(rel: str, exc: OSError) -> AgentError:
    return path_error(rel, exc)
