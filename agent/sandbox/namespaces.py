"""Linux namespaces through ctypes: a private user, mount, network, IPC and PID namespace.

Used by the launcher only (a single-threaded process, as `unshare(CLONE_NEWUSER)` requires).
A fresh network namespace has nothing but a loopback device that nobody else can reach, so the
host's network — and services listening on the host's 127.0.0.1 — are out of reach; a fresh PID
namespace is torn down by the kernel as soon as its first process dies, so nothing started inside
can outlive the sandbox. Only the stdlib is imported.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["NamespaceError", "unshare_all", "bind_mount", "bind_read_only", "make_rprivate", "mount_proc", "loopback_up",
           "CLONE_NEWUSER", "CLONE_NEWNET"]

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1

_libc: ctypes.CDLL | None = None


class NamespaceError(OSError):
    """A namespace or mount operation failed."""


def _c() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(res: int, what: str) -> None:
    if res != 0:
        err = ctypes.get_errno()
        raise NamespaceError(err, f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def unshare_all(*, pid: bool = True, net: bool = True, mount: bool = True) -> None:
    """Enter new user (+ mount, network, IPC, PID) namespaces, keeping this uid/gid mapped to itself.

    The PID namespace applies to children: the next fork becomes its process 1.
    """
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWUSER | CLONE_NEWIPC
    flags |= CLONE_NEWNS if mount else 0
    flags |= CLONE_NEWNET if net else 0
    flags |= CLONE_NEWPID if pid else 0
    _check(_c().unshare(ctypes.c_int(flags)), "unshare")
    # Same ids inside as outside: files keep their owners, and nothing new is gained outside.
    try:
        _write("/proc/self/setgroups", "deny")
    except FileNotFoundError:
        pass
    _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
    _write("/proc/self/gid_map", f"{gid} {gid} 1\n")


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    _check(_c().mount(source.encode() if source else None, target.encode(),
                      fstype.encode() if fstype else None, ctypes.c_ulong(flags), None), f"mount {target}")


def make_rprivate() -> None:
    """Nothing mounted from now on propagates back to the host."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)


def bind_mount(source: str, target: str) -> None:
    """Bind `source` (a path or `/proc/self/fd/N`) over `target`."""
    _mount(source, target, None, _MS_BIND | _MS_REC)


def bind_read_only(path: str) -> None:
    """`path` (and all beneath it) becomes read-only in this mount namespace: writes fail with EROFS."""
    _mount(path, path, None, _MS_BIND | _MS_REC)
    _mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY)


def mount_proc() -> None:
    """A /proc that shows only this PID namespace (the caller must be inside it)."""
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)


def loopback_up() -> None:
    """Bring up `lo` in a fresh network namespace, so local-only tests (a server on 127.0.0.1) work."""
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, req + b"\0" * 22)[:18])[1]
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | _IFF_UP) + b"\0" * 22)
