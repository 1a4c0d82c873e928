"""A small ctypes binding to Linux Landlock: what the kernel supports, and confining this thread.

Landlock is an allow-list enforced by the kernel: once `restrict_self` ran, this thread (and every
process it later starts) may only touch the file hierarchies it was granted, with the rights it
was granted, whatever its uid — root included. It needs no privileges and no namespaces.

Only the stdlib is imported: the launcher runs it with `python -I -S` before exec'ing a command.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat

__all__ = ["abi_version", "Rules", "restrict_self", "LandlockError", "FS_READ", "FS_WRITE", "FS_EXECUTE",
           "handled_fs", "set_no_new_privs"]

# Syscall numbers are the same on x86_64 and aarch64 (both use the generic table from 5.13 on).
_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "arm64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights, with the ABI that introduced them.
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13          # ABI 2
TRUNCATE = 1 << 14       # ABI 3
IOCTL_DEV = 1 << 15      # ABI 5
_ABI1_FS = (1 << 13) - 1

# Network rights (ABI 4) and scopes (ABI 6).
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

# What a grant means, before masking by what the kernel knows.
FS_READ = READ_FILE | READ_DIR | IOCTL_DEV
FS_EXECUTE = EXECUTE
FS_WRITE = (WRITE_FILE | READ_FILE | READ_DIR | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG
            | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM | REFER | TRUNCATE | IOCTL_DEV)
# Rights that only make sense on a directory; a rule on a file must not carry them.
_DIR_ONLY = READ_DIR | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO \
    | MAKE_BLOCK | MAKE_SYM | REFER


class LandlockError(OSError):
    """Landlock is missing, disabled, or refused a ruleset."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc: ctypes.CDLL | None = None


def _syscall(index: int, *args: object) -> int:
    global _libc
    numbers = _SYSCALLS.get(os.uname().machine)
    if numbers is None:
        raise LandlockError(errno.ENOSYS, f"Landlock binding: unsupported architecture {os.uname().machine}")
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    res = int(_libc.syscall(ctypes.c_long(numbers[index]), *args))
    if res < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, os.strerror(err))
    return res


def abi_version() -> int:
    """The Landlock ABI this kernel offers; 0 when it is missing or disabled."""
    try:
        return _syscall(0, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except LandlockError:
        return 0


def handled_fs(abi: int) -> int:
    """Every filesystem right the kernel can enforce at this ABI (all of them are handled: deny by default)."""
    rights = _ABI1_FS
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class Rules:
    """What a confined process may do: per-path rights, and whether TCP and outside signals are denied.

    read: read and list only; execute: read + execute; write: everything, including create, delete
    and execute; write_no_exec: everything but execute. deny_tcp (ABI 4): no TCP bind or connect.
    scope_signals / scope_abstract_unix (ABI 6): no signals to, and no abstract unix sockets of,
    processes outside the domain. (A plain class: the launcher cannot afford importing dataclasses.)
    """

    def __init__(self, *, read: tuple[str, ...] = (), execute: tuple[str, ...] = (), write: tuple[str, ...] = (),
                 write_no_exec: tuple[str, ...] = (), deny_tcp: bool = True, scope_signals: bool = True,
                 scope_abstract_unix: bool = True) -> None:
        self.read = read
        self.execute = execute
        self.write = write
        self.write_no_exec = write_no_exec
        self.deny_tcp = deny_tcp
        self.scope_signals = scope_signals
        self.scope_abstract_unix = scope_abstract_unix


def _grants(rules: Rules) -> list[tuple[str, int]]:
    return ([(p, FS_READ) for p in rules.read] + [(p, FS_READ | FS_EXECUTE) for p in rules.execute]
            + [(p, FS_WRITE | FS_EXECUTE) for p in rules.write] + [(p, FS_WRITE) for p in rules.write_no_exec])


def set_no_new_privs() -> None:
    """No setuid/file-capability gains from now on (required by Landlock for unprivileged callers)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"PR_SET_NO_NEW_PRIVS: {os.strerror(err)}")


def restrict_self(rules: Rules, abi: int | None = None) -> int:
    """Confine the calling thread (and its future children) to `rules`; returns the ABI used.

    Paths that do not exist are skipped. Open rule paths with O_PATH first, so that callers may
    mount over a path afterwards only if they opened it before (see `confine`).
    """
    abi = abi_version() if abi is None else abi
    if abi < 1:
        raise LandlockError(errno.EOPNOTSUPP, "Landlock is not available in this kernel")
    handled = handled_fs(abi)
    attr = _RulesetAttr(handled_access_fs=handled)
    if abi >= 4 and rules.deny_tcp:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
    if abi >= 6:
        attr.scoped = (SCOPE_SIGNAL if rules.scope_signals else 0) | \
            (SCOPE_ABSTRACT_UNIX_SOCKET if rules.scope_abstract_unix else 0)
    ruleset = _syscall(0, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    try:
        for path, rights in _grants(rules):
            add_path_rule(ruleset, path, rights & handled)
        set_no_new_privs()
        _syscall(2, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return abi


def add_path_rule(ruleset: int, path: str, rights: int) -> bool:
    """Grant `rights` beneath `path`; False when the path does not exist."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= ~_DIR_ONLY
        if rights:
            rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
            _syscall(1, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                     ctypes.c_uint32(0))
    finally:
        os.close(fd)
    return True
