"""The bubblewrap fallback: the same boundary as bind mounts in fresh namespaces, for kernels
without Landlock. Only what is listed exists inside: the system directories read-only, the
workspace read-write, a private /tmp and $HOME, a minimal /dev and a /proc of its own PID
namespace; no network namespace is shared. Only the stdlib is imported.
"""

from __future__ import annotations

import os

from agent.sandbox.grants import is_within
from agent.sandbox.policy import Policy

__all__ = ["bwrap_argv"]

_MERGED_USR = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def bwrap_argv(policy: Policy, argv: list[str]) -> list[str]:
    """`bwrap … -- argv` for `policy` (mode bubblewrap)."""
    assert policy.bwrap and policy.tmp
    out = [policy.bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user",
           "--cap-drop", "ALL", "--dev", "/dev", "--proc", "/proc"]
    binds: list[tuple[str, list[str]]] = []
    for top in _MERGED_USR:  # /bin -> usr/bin on merged-/usr systems: `#!/bin/sh` must still work
        if os.path.islink(top):
            binds.append((top, ["--symlink", os.readlink(top), top]))
    for path in sorted({*policy.read, *policy.execute}):
        if path.startswith(("/proc", "/dev")):
            continue
        if os.path.islink(path):
            binds.append((path, ["--symlink", os.readlink(path), path]))
        else:
            binds.append((path, ["--ro-bind-try", path, path]))
    tmp = os.path.join(policy.tmp, "tmp")
    binds.append(("/tmp", ["--bind", tmp, "/tmp"]))
    if policy.home and not is_within(policy.home, "/tmp"):
        binds.append((policy.home, ["--bind", os.path.join(policy.tmp, "home"), policy.home]))
    elif policy.home:
        binds.append((policy.home, ["--dir", policy.home]))   # inside the private /tmp
    binds.append((policy.workspace, ["--bind", policy.workspace, policy.workspace]))
    for path in policy.protect:  # the agent's records, read-only on top of the workspace
        if os.path.isdir(path) and not os.path.islink(path) and is_within(path, policy.workspace):
            binds.append((path, ["--ro-bind", path, path]))
    # Parents before children, so a grant beneath /tmp or $HOME lands on top of the private dir.
    for _, args in sorted(binds, key=lambda b: (b[0].count("/"), b[0])):
        out += args
    out += ["--chdir", policy.workspace, "--"]
    return out + argv
