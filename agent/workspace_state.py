"""The workspace digest, kept up to date in O(changes) instead of O(files).

The digest covers the project's own files (see `agent.walk`): sha256 over sorted
`path NUL entry` lines, where entry is the content sha256 of a regular file or `link:<target>` of
a symbolic link. It must be exact: any changed byte in any walked file changes it.

How it stays cheap in a long-lived process: the first digest walks and hashes everything and puts
an inotify watch on every walked directory. Later digests drain the inotify queue *synchronously*
(the kernel queues an event before the writer's system call returns, so no change that happened
before `digest()` was called can be missed) and rehash only the paths named by events. Nothing
changed → the cached digest, with no walk and no stat. This is why raw inotify (through the small
`inotify_simple` wrapper) is used rather than a watcher thread with debouncing (`watchfiles`): a
thread would deliver changes late, and a late change means a wrong receipt replay.

Falls back to a full walk with a stat cache keyed by (size, mtime, ctime, inode) when inotify is
missing, out of watches, or its queue overflowed; ctime cannot be set from user space, so an edit
that restores size and mtime is still seen.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Any

from agent.walk import BOOKKEEPING_DIRS, IgnoreRules, is_rule_file, walk_dirs

__all__ = ["DigestState"]

_HASH_CHUNK = 1024 * 1024


def _hash_file(path: str) -> str | None:
    h = hashlib.sha256()
    try:
        # O_NONBLOCK: a file swapped for a FIFO after the lstat must not hang the digest
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        while True:
            chunk = os.read(fd, _HASH_CHUNK)
            if not chunk:
                break
            h.update(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return h.hexdigest()


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class _Watcher:
    """inotify watches on walked directories, drained synchronously."""

    def __init__(self, inotify: Any, flags: Any) -> None:
        self.inotify = inotify
        self.flags = flags
        self.mask = (flags.CREATE | flags.DELETE | flags.MODIFY | flags.ATTRIB | flags.CLOSE_WRITE |
                     flags.MOVED_FROM | flags.MOVED_TO | flags.DELETE_SELF | flags.MOVE_SELF |
                     flags.DONT_FOLLOW | flags.ONLYDIR)
        self.wd_dir: dict[int, str] = {}
        self.dir_wd: dict[str, int] = {}

    @classmethod
    def create(cls) -> _Watcher | None:
        try:
            from inotify_simple import INotify, flags

            return cls(INotify(nonblocking=True), flags)
        except (ImportError, OSError):
            return None

    def watch(self, root: str, dir_rel: str) -> bool:
        if dir_rel in self.dir_wd:
            return True
        try:
            wd = self.inotify.add_watch(os.path.join(root, dir_rel) if dir_rel else root, self.mask)
        except OSError:
            return False  # ENOSPC (out of watches), or the directory vanished: caller rescans
        self.wd_dir[wd] = dir_rel
        self.dir_wd[dir_rel] = wd
        return True

    def drain(self) -> tuple[set[str], set[str], bool]:
        """(changed paths, changed directories, overflowed) since the last drain."""
        paths: set[str] = set()
        dirs: set[str] = set()
        overflow = False
        f = self.flags
        while True:
            try:
                events = self.inotify.read(timeout=0)
            except OSError:
                return paths, dirs, True
            if not events:
                break
            for ev in events:
                if ev.mask & f.Q_OVERFLOW:
                    overflow = True
                    continue
                base = self.wd_dir.get(ev.wd)
                if base is None:
                    continue
                if ev.mask & f.IGNORED:
                    self.dir_wd.pop(self.wd_dir.pop(ev.wd, ""), None)
                    continue
                if ev.mask & (f.DELETE_SELF | f.MOVE_SELF):
                    dirs.add(base)
                    continue
                if not ev.name:
                    continue
                rel = f"{base}/{ev.name}" if base else ev.name
                if ev.mask & f.ISDIR:
                    dirs.add(rel)
                else:
                    paths.add(rel)
        return paths, dirs, overflow

    def forget_under(self, dir_rel: str) -> None:
        prefix = dir_rel + "/"
        for d in [d for d in self.dir_wd if d == dir_rel or d.startswith(prefix)]:
            wd = self.dir_wd.pop(d)
            self.wd_dir.pop(wd, None)
            try:
                self.inotify.rm_watch(wd)
            except OSError:
                pass

    def close(self) -> None:
        try:
            self.inotify.close()
        except OSError:
            pass


class DigestState:
    """Per-file entries of one workspace and their combined digest."""

    def __init__(self, root: str, *, watch: bool = True) -> None:
        self.root = root
        self.rules = IgnoreRules(root)
        self.entries: dict[str, str] = {}
        self._stats: dict[str, tuple[int, int, int, int]] = {}
        self._digest: str | None = None
        self._want_watch = watch
        self._watcher: _Watcher | None = None
        self.full_scans = 0  # how often the whole tree was walked (tests and bench read it)

    # -- public ----------------------------------------------------------------------------
    def digest(self) -> str:
        """The current digest; O(changes since the last call) while the watcher is healthy."""
        if self._watcher is None or self._digest is None:
            self._full_scan()
        else:
            paths, dirs, overflow = self._watcher.drain()
            if overflow or any(is_rule_file(p) for p in paths):
                self._full_scan()
            elif paths or dirs:
                self._apply(paths, dirs)
        assert self._digest is not None
        return self._digest

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None

    # -- scanning --------------------------------------------------------------------------
    def _full_scan(self) -> None:
        self.full_scans += 1
        self.rules.forget()
        if self._watcher is None and self._want_watch and self.full_scans <= 3:
            self._watcher = _Watcher.create()
        entries: dict[str, str] = {}
        healthy = self._watcher is not None
        if self._watcher is not None:
            # Fresh watches: events from before this scan are irrelevant now.
            self._watcher.drain()
        def watch(dir_rel: str) -> None:
            nonlocal healthy
            if self._watcher is not None and healthy:
                healthy = self._watcher.watch(self.root, dir_rel)

        if self._watcher is not None and os.path.isdir(os.path.join(self.root, ".git", "info")):
            self._watcher.watch(self.root, ".git/info")  # .git/info/exclude is a rule file too
        for _, files in walk_dirs(self.root, self.rules, before_list=watch):
            for rel in files:
                entry = self._entry(rel)
                if entry is not None:
                    entries[rel] = entry
        if not healthy and self._watcher is not None:
            self._watcher.close()   # out of watches: stat-walk from now on
            self._watcher = None
            self._want_watch = False
        self._stats = {k: v for k, v in self._stats.items() if k in entries}
        self.entries = entries
        self._digest = self._combine()

    def _entry(self, rel: str) -> str | None:
        """The digest entry of one path, or None when it is not a file (any more)."""
        full = os.path.join(self.root, rel)
        try:
            st = os.lstat(full)
        except OSError:
            self._stats.pop(rel, None)
            return None
        if stat.S_ISLNK(st.st_mode):
            if os.path.isdir(full):
                return None  # the walk neither lists nor follows links to directories
            try:
                return "link:" + os.readlink(full)
            except OSError:
                return None
        if not stat.S_ISREG(st.st_mode):
            return None
        key = _stat_key(st)
        if self._stats.get(rel) == key and rel in self.entries:
            return self.entries[rel]
        digest = _hash_file(full)
        if digest is not None:
            self._stats[rel] = key
        return digest

    def _apply(self, paths: set[str], dirs: set[str]) -> None:
        assert self._watcher is not None
        for d in sorted(dirs):
            # A directory appeared, vanished or moved: drop what we knew under it, walk it anew.
            prefix = d + "/"
            for rel in [r for r in self.entries if r.startswith(prefix)]:
                del self.entries[rel]
            self._watcher.forget_under(d)
            if d and (d.split("/")[0] in BOOKKEEPING_DIRS or self.rules.path_ignored(d)):
                continue
            if os.path.isdir(os.path.join(self.root, d)) and not os.path.islink(os.path.join(self.root, d)):
                if not self._walk_new_dir(d):  # out of watches: from now on every digest walks
                    self._full_scan_without_watcher()
                    return
        for rel in paths:
            if self.rules.path_ignored(rel):
                self.entries.pop(rel, None)
                continue
            self._stats.pop(rel, None)  # an event means: rehash, whatever the stat says
            entry = self._entry(rel)
            if entry is None:
                self.entries.pop(rel, None)
            else:
                self.entries[rel] = entry
        self._digest = self._combine()

    def _walk_new_dir(self, d: str) -> bool:
        """Watch and hash a directory that appeared; False when a watch could not be added."""
        assert self._watcher is not None
        watcher = self._watcher
        lost: list[str] = []

        def watch(dir_rel: str) -> None:
            if not watcher.watch(self.root, dir_rel):
                lost.append(dir_rel)

        for _, files in walk_dirs(self.root, self.rules, start=d, before_list=watch):
            for rel in files:
                entry = self._entry(rel)
                if entry is not None:
                    self.entries[rel] = entry
        return not lost

    def _full_scan_without_watcher(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
        self._watcher = None
        self._want_watch = False
        self._full_scan()

    def _combine(self) -> str:
        outer = hashlib.sha256()
        for rel in sorted(self.entries):
            outer.update(f"{rel}\0{self.entries[rel]}\n".encode("utf-8", "surrogateescape"))
        return "sha256:" + outer.hexdigest()
