"""A seccomp filter, built by hand, that takes sockets away: `socket()` and `io_uring_setup()` fail.

Used where no network namespace can be made (no user namespaces) and always in the plan worker,
which needs no socket at all: it talks to the agent over inherited pipes. `socketpair()` stays
allowed (asyncio and friends use it; it cannot reach anything outside). Only the stdlib is imported.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

__all__ = ["deny_sockets", "SeccompError", "supported"]

_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_LD_W_ABS = 0x20       # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15            # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35            # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06            # BPF_RET | BPF_K
_X32_BIT = 0x40000000

# machine → (AUDIT_ARCH, __NR_socket, __NR_io_uring_setup)
_ARCH = {"x86_64": (0xC000003E, 41, 425), "aarch64": (0xC00000B7, 198, 425), "arm64": (0xC00000B7, 198, 425)}


class SeccompError(OSError):
    """The filter could not be installed."""


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def supported() -> bool:
    """True on an architecture this filter knows."""
    return os.uname().machine in _ARCH


def _program() -> bytes:
    arch, nr_socket, nr_io_uring = _ARCH[os.uname().machine]
    deny = _RET_ERRNO | errno.EACCES

    def ins(code: int, jt: int, jf: int, k: int) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    return b"".join([
        ins(_LD_W_ABS, 0, 0, 4),            # 0: A = arch
        ins(_JEQ, 1, 0, arch),              # 1: native? → 3
        ins(_RET, 0, 0, _RET_ERRNO | errno.ENOSYS),  # 2: foreign ABI (i386 socketcall …): refused
        ins(_LD_W_ABS, 0, 0, 0),            # 3: A = syscall number
        ins(_JGE, 3, 0, _X32_BIT),          # 4: x32 numbers → 8
        ins(_JEQ, 2, 0, nr_socket),         # 5: socket → 8
        ins(_JEQ, 1, 0, nr_io_uring),       # 6: io_uring (can open sockets) → 8
        ins(_RET, 0, 0, _RET_ALLOW),        # 7
        ins(_RET, 0, 0, deny),              # 8
    ])


def deny_sockets() -> None:
    """Install the filter on the calling thread (no_new_privs must already be set, or root)."""
    if not supported():
        raise SeccompError(errno.ENOSYS, f"seccomp filter: unsupported architecture {os.uname().machine}")
    prog = _program()
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = _SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise SeccompError(err, f"seccomp: {os.strerror(err)}")
