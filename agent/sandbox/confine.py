"""Apply a `Policy` to the calling process: masks and mounts, Landlock, seccomp, capabilities.

`confine_command` runs in the launcher's child just before a command is exec'd; `confine_worker`
runs in the plan worker once its request names the workspace. Both leave the process unable to
leave the boundary again: Landlock and seccomp cannot be lifted, mounts cannot be changed under
Landlock, and no_new_privs blocks setuid programs. Only the stdlib is imported.
"""

from __future__ import annotations

import ctypes
import os

from agent.sandbox import landlock, namespaces, seccomp
from agent.sandbox.grants import DEVICES, WRITABLE_DEVICES, is_within
from agent.sandbox.policy import BWRAP, LANDLOCK, LANDLOCK_NS, NONE, Policy

__all__ = ["confine_command", "confine_worker", "mask_host_dirs", "command_rules", "worker_rules",
           "drop_capabilities", "command_env", "make_undumpable"]

_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
# Host directories a namespaced command sees as empty private ones; /run holds the sockets of
# agents and daemons (gpg-agent, docker, dbus) that Landlock ABI 7 cannot stop a connect() to.
_MASKS = ("/tmp", "/dev/shm", "/run", "/var/run", "/var/tmp")


def _masks(policy: Policy) -> list[tuple[str, str]]:
    """(host path, private replacement) pairs, parents first."""
    assert policy.tmp is not None
    out = []
    for host in _MASKS:
        if os.path.isdir(host) and not os.path.islink(host):
            out.append((host, os.path.join(policy.tmp, "tmp" if host == "/tmp" else "dirs" + host.replace("/", "_"))))
    if policy.home and os.path.isdir(policy.home) and not any(is_within(policy.home, h) for h, _ in out):
        out.append((policy.home, os.path.join(policy.tmp, "home")))
    return sorted(out, key=lambda hp: hp[0].count("/"))


def mask_host_dirs(policy: Policy) -> None:
    """In a private mount namespace: /tmp, /run, … and $HOME become empty private dirs, and every
    granted path that lived beneath them (the workspace, a venv under $HOME) is bound back in place.
    """
    masks = _masks(policy)
    grants = sorted({policy.workspace, *policy.read, *policy.execute}, key=lambda p: p.count("/"))
    # Everything is opened before the first mount: the private dirs themselves live under the
    # host's /tmp, which the first mount hides.
    sources: list[tuple[str, int]] = []
    for host, private in masks:
        os.makedirs(private, mode=0o700, exist_ok=True)
        sources.append((host, os.open(private, os.O_PATH | os.O_CLOEXEC)))
    keep: list[tuple[str, int, bool]] = []
    for g in grants:
        # Strictly beneath: a grant of /tmp itself must not bring the host's /tmp back.
        if any(is_within(g, host) and g != host for host, _ in masks) and \
                not any(is_within(g, k) for k, _, _ in keep):
            try:
                keep.append((g, os.open(g, os.O_PATH | os.O_CLOEXEC), os.path.isdir(g)))
            except OSError:
                continue
    namespaces.make_rprivate()
    for host, fd in sources:
        namespaces.bind_mount(f"/proc/self/fd/{fd}", host)
        os.close(fd)
    for path, fd, is_dir in keep:
        if is_dir:
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "ab"):
                pass
        namespaces.bind_mount(f"/proc/self/fd/{fd}", path)
        os.close(fd)
    if policy.home and not os.path.isdir(policy.home) and any(is_within(policy.home, h) for h, _ in masks):
        # $HOME lived under /tmp: it is now private and empty. exist_ok: the segments of one pipeline
        # share that private /tmp and start at the same time.
        os.makedirs(policy.home, mode=0o700, exist_ok=True)


def command_rules(policy: Policy) -> landlock.Rules:
    """Read + execute the system, read + write + execute the workspace and the private temp dirs."""
    assert policy.tmp is not None
    if policy.mode == LANDLOCK_NS:
        writable = [policy.workspace, *(host for host, _ in _masks(policy))]
    else:
        writable = [policy.workspace, policy.tmp]
    return landlock.Rules(read=DEVICES, execute=tuple(policy.execute) + tuple(policy.read),
                          write=tuple(writable), write_no_exec=WRITABLE_DEVICES,
                          deny_tcp=policy.mode != LANDLOCK_NS)


def worker_rules(policy: Policy) -> landlock.Rules:
    """Read the interpreter and libraries, write the workspace, execute nothing, no TCP."""
    return landlock.Rules(read=(*policy.read, *DEVICES), write_no_exec=(policy.workspace, *WRITABLE_DEVICES))


def drop_capabilities() -> None:
    """Empty the bounding and ambient sets: root (inside a user namespace or not) keeps no capability
    after exec. Without CAP_SETPCAP (not root) this does nothing, and nothing was there to drop."""
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            last = int(fh.read().strip())
    except (OSError, ValueError):
        last = 40
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range(last + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)


def make_undumpable() -> None:
    """Keep this process's environment (API keys) and memory from processes of the same uid.

    Landlock stops a confined command from ptrace-attaching to the agent, but not from reading
    /proc/<agent>/environ; a non-dumpable process's /proc files need CAP_SYS_PTRACE, which
    confined commands no longer have (`drop_capabilities`). ssh-agent does the same.
    """
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def command_env(policy: Policy, env: dict[str, str]) -> dict[str, str]:
    """The command's environment: TMPDIR and HOME private, no pointers to the user's sockets.

    Unsandboxed (mode none, by the user's choice) it is left as it was.
    """
    if policy.mode == NONE:
        return dict(env)
    out = {k: v for k, v in env.items()
           if k not in ("SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR",
                        "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")}
    if policy.tmp is None:
        return out
    if policy.mode in (LANDLOCK_NS, BWRAP):
        tmp = "/tmp"
        if policy.home:
            out["HOME"] = policy.home    # now an empty private directory
    else:
        tmp = os.path.join(policy.tmp, "tmp")
        out["HOME"] = os.path.join(policy.tmp, "home")
    out.update(TMPDIR=tmp, TMP=tmp, TEMP=tmp, TEMPDIR=tmp)
    return out


def confine_command(policy: Policy) -> None:
    """Everything but the exec; in mode landlock+namespaces the caller is process 1 of a new PID namespace."""
    if policy.mode == LANDLOCK_NS:
        mask_host_dirs(policy)
        for path in policy.protect:  # the agent's records: before Landlock, which forbids mounts
            if os.path.isdir(path) and not os.path.islink(path) and is_within(path, policy.workspace):
                namespaces.bind_read_only(path)
        try:
            namespaces.mount_proc()
        except OSError:
            pass  # a container may lock /proc; Landlock still keeps other processes' memory out of reach
        try:
            namespaces.loopback_up()
        except OSError:
            pass
    os.chdir(policy.workspace)
    if policy.mode in (LANDLOCK_NS, LANDLOCK):
        landlock.restrict_self(command_rules(policy), policy.landlock_abi or None)
    if policy.mode == LANDLOCK:
        seccomp.deny_sockets()
    drop_capabilities()  # root keeps none after exec: no CAP_SYS_PTRACE to read the agent's /proc files


def confine_worker(policy: Policy) -> list[str]:
    """Confine the plan worker; returns what is in force (for its report)."""
    applied = []
    if policy.landlock_abi >= 1:
        landlock.restrict_self(worker_rules(policy), policy.landlock_abi)
        applied.append(f"landlock-abi-{policy.landlock_abi}")
    else:
        landlock.set_no_new_privs()
    if seccomp.supported():
        seccomp.deny_sockets()
        applied.append("seccomp-no-sockets")
    return applied
