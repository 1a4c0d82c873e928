"""The launcher: `python -I -S launch.py --lifeline FD --policy JSON -- ARGV...` runs ARGV confined.

It stays behind as a tiny supervisor (this process is never confined itself) so that nothing a
command starts can outlive it:

    agent ─ launcher (supervisor; own session, subreaper)
              └─ init (PID 1 of a new PID namespace, or the command itself without namespaces)
                   └─ command (Landlock, no network, private /tmp and $HOME, no capabilities)

- The agent holds the write end of the lifeline pipe. When it closes — the agent ended, even by
  SIGKILL, or it is done with the command — the supervisor kills everything below it and exits.
- The child gets PR_SET_PDEATHSIG(SIGKILL) towards the supervisor, a single-threaded process, so
  the "parent thread exited" pitfall of PDEATHSIG cannot fire early; a pipe closes the race where
  the supervisor dies before the child has set it.
- In a PID namespace the kernel kills every process in it when its PID 1 dies; without one the
  supervisor, a child subreaper, kills its remaining descendants when the command ends.

The exit status is the command's (a signal is re-raised). Start-up is what a command pays: only
cheap stdlib modules are imported (not `signal` or `json`, which pull in `enum` and `re`; libc's
signal() and a line format do), near the interpreter's own `python -I -S` start.
`--probe` prints what the kernel offers, as JSON.
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import sys

if __name__ == "__main__":  # run as a file in isolated mode: import this copy of the package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from agent.sandbox import landlock, namespaces  # noqa: E402
from agent.sandbox.policy import BWRAP, LANDLOCK_NS, NONE, Policy  # noqa: E402

__all__ = ["main", "probe"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_EXIT_LOST_PARENT = 125
# Signal numbers shared by x86_64 and aarch64 (the generic Linux table).
_SIGINT, _SIGQUIT, _SIGKILL, _SIGPIPE, _SIGTERM, _SIGXFSZ = 2, 3, 9, 13, 15, 25
_SIG_DFL = None
_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, arg: int) -> None:
    _libc.prctl(option, arg, 0, 0, 0)


def _default_action(sig: int) -> None:
    _libc.signal(sig, _SIG_DFL)


def _say(text: str) -> None:
    try:
        os.write(2, f"luallm-agent sandbox: {text}\n".encode(errors="replace"))
    except OSError:
        pass


def _parent_gone(alive_fd: int) -> bool:
    """The supervisor holds the write end; a hang-up means it died before we set PDEATHSIG."""
    poller = select.poll()
    poller.register(alive_fd, select.POLLIN)
    return bool(poller.poll(0))


def _exec(argv: list[str]) -> None:
    """Replace this process by the command; on failure say why and exit like a shell (127/126)."""
    for sig in (_SIGPIPE, _SIGXFSZ, _SIGINT, _SIGTERM, _SIGQUIT):
        _default_action(sig)   # Python ignores SIGPIPE and SIGXFSZ; a command expects the defaults
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        _say(f"{argv[0]}: {exc.strerror or exc}")
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


def _status_code(status: int) -> int:
    return os.waitstatus_to_exitcode(status)


def _init(policy: Policy, argv: list[str], status_w: int) -> None:
    """PID 1 of the new PID namespace: confine, start the command, reap, report its status."""
    from agent.sandbox.confine import confine_command

    confine_command(policy)
    pid = os.fork()
    if pid == 0:
        os.close(status_w)
        _exec(argv)
    while True:  # reap everything; the command's own end is what counts
        try:
            got, status = os.wait()
        except ChildProcessError:
            os._exit(_EXIT_LOST_PARENT)
        if got == pid:
            os.write(status_w, struct.pack("=i", status))
            os._exit(0)  # the kernel now kills whatever else is left in the namespace


def _child(policy: Policy, argv: list[str], alive_r: int, status_w: int) -> None:
    _prctl(_PR_SET_PDEATHSIG, _SIGKILL)
    if _parent_gone(alive_r):
        os._exit(_EXIT_LOST_PARENT)
    os.close(alive_r)
    try:
        if policy.mode == LANDLOCK_NS:
            _init(policy, argv, status_w)
        os.close(status_w)
        if policy.mode == BWRAP:
            from agent.sandbox.bwrap import bwrap_argv

            argv = bwrap_argv(policy, argv)
        elif policy.mode != NONE:
            from agent.sandbox.confine import confine_command

            confine_command(policy)
        else:
            os.chdir(policy.workspace)
    except OSError as exc:  # fail closed: never run the command half-confined
        if os.environ.get("LUALLM_AGENT_SANDBOX_DEBUG"):
            import traceback

            traceback.print_exc()
        _say(f"cannot apply the {policy.mode} boundary: {exc}")
        os._exit(126)
    _exec(argv)


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
            parents[int(name)] = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found: list[int] = []
    frontier = [root]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        found += kids
        frontier += kids
    return found


def _kill_below() -> None:
    """SIGKILL every descendant (orphans come back to us: we are a subreaper) until none is left."""
    me = os.getpid()
    for _ in range(100):
        # Every living descendant has a living parent below us or, orphaned, was handed to us
        # (subreaper): no child left means nothing left, and no /proc scan is needed.
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        victims = _descendants(me)
        if not victims:
            return
        for pid in victims:
            try:
                os.kill(pid, _SIGKILL)
            except ProcessLookupError:
                pass
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


def _supervise(pid: int, lifeline: int | None, status_r: int, policy: Policy) -> int:
    watch = [os.pidfd_open(pid)]
    if lifeline is not None:
        watch.append(lifeline)
    while True:
        ready, _, _ = select.select(watch, [], [])
        if lifeline is not None and lifeline in ready:   # the agent is gone, or done with us
            try:
                os.kill(pid, _SIGKILL)
            except ProcessLookupError:
                pass
            _kill_below()
            os.kill(os.getpid(), _SIGKILL)  # report "killed", like a command killed directly
        if watch[0] in ready:
            break
    _, status = os.waitpid(pid, 0)
    if policy.mode == LANDLOCK_NS:
        data = os.read(status_r, 4)
        if len(data) == 4:
            status = struct.unpack("=i", data)[0]
    _kill_below()
    return _status_code(status)


def _mirror(code: int) -> None:
    if code < 0:
        _default_action(-code)
        os.kill(os.getpid(), -code)
        code = 128 - code
    sys.stdout.flush()
    os._exit(code)


def main(args: list[str]) -> None:
    if args[:1] == ["--probe"]:
        import json

        sys.stdout.write(json.dumps(probe()) + "\n")
        return
    try:
        split = args.index("--")
        opts = dict(zip(args[:split:2], args[1:split:2], strict=True))
        policy = Policy.from_text(opts["--policy"])
        argv = args[split + 1:]
        lifeline = int(opts["--lifeline"]) if "--lifeline" in opts else None
    except (ValueError, KeyError) as exc:
        _say(f"usage: launch.py [--lifeline FD] --policy JSON -- ARGV... ({exc})")
        os._exit(2)
    if not argv:
        _say("no command")
        os._exit(2)
    if lifeline is not None:
        os.set_inheritable(lifeline, False)
    if os.getpid() != os.getsid(0):
        os.setsid()
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if policy.mode == LANDLOCK_NS:
        try:
            namespaces.unshare_all()
        except OSError as exc:
            _say(f"cannot create namespaces: {exc}")
            os._exit(126)
    alive_r, alive_w = os.pipe()
    status_r, status_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(alive_w)
        os.close(status_r)
        if lifeline is not None:
            os.close(lifeline)
        _child(policy, argv, alive_r, status_w)
    os.close(alive_r)
    os.close(status_w)
    _mirror(_supervise(pid, lifeline, status_r, policy))


def _trial(step: str) -> str | None:
    """Run `step` in a throw-away child; None when it worked, else the error."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            if step == "namespaces":
                namespaces.unshare_all()
                inner = os.fork()
                if inner == 0:
                    namespaces.make_rprivate()
                    namespaces.bind_mount("/", "/mnt") if os.path.isdir("/mnt") else None
                    namespaces.loopback_up()
                    os._exit(0)
                _, st = os.waitpid(inner, 0)
                if st != 0:
                    raise OSError("mounts or loopback failed inside the namespaces")
            elif step == "seccomp":
                from agent.sandbox import seccomp

                landlock.set_no_new_privs()
                seccomp.deny_sockets()
            elif step == "landlock":
                landlock.restrict_self(landlock.Rules(read=("/",)))
        except Exception as exc:  # report any failure as text
            os.write(w, str(exc).encode()[:500] or b"failed")
            os._exit(1)
        os._exit(0)
    os.close(w)
    err = os.read(r, 600).decode(errors="replace")
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if status != 0 and not err:
        err = f"trial exited with status {status}"
    return err or None


def probe() -> dict[str, object]:
    """What this kernel lets an unprivileged process do, tried for real in throw-away children."""
    abi = landlock.abi_version()
    landlock_err = _trial("landlock") if abi else "Landlock is not available (kernel < 5.13 or not enabled)"
    ns_err = _trial("namespaces")
    seccomp_err = _trial("seccomp")
    return {"landlock_abi": abi if landlock_err is None else 0, "landlock_error": landlock_err,
            "userns": ns_err is None, "userns_error": ns_err,
            "seccomp": seccomp_err is None, "seccomp_error": seccomp_err}


if __name__ == "__main__":
    main(sys.argv[1:])
