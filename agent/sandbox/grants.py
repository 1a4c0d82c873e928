"""Which paths a confined process may read: system directories and the Python install, never secrets.

Landlock is an allow-list, so "everything but ~/.ssh" is built the other way round: a granted
directory that contains a secret is replaced by its children, minus the secret, recursively along
the secret's path. $HOME itself is never granted wholesale (only what lies on PATH or holds the
Python install), and the well-known secret stores are never granted at all, even inside a grant.
"""

from __future__ import annotations

import os
import sys

__all__ = ["SYSTEM_DIRS", "DEVICES", "secret_paths", "python_dirs", "command_read_dirs", "worker_read_dirs",
           "expand_excluding", "is_within", "package_root"]

# Read (and execute) for commands; what a typical toolchain reads.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc", "/proc", "/sys",
               "/nix/store", "/gnu/store")
# Only the worker's libraries: it executes nothing and needs no configuration.
_WORKER_SYSTEM_DIRS = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib", "/lib", "/lib64", "/lib32",
                       "/usr/share/zoneinfo")
# Device nodes that are harmless to read (and /dev/null etc. to write).
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")
_HOME_SECRETS = (".ssh", ".gnupg", ".aws", ".config", ".netrc", ".docker", ".kube", ".git-credentials",
                 ".npmrc", ".pypirc", ".azure", ".gcloud", ".password-store", ".local/share/keyrings",
                 ".vault-token", ".terraform.d", ".m2/settings.xml", ".cargo/credentials",
                 ".cargo/credentials.toml")
_SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh", "/etc/sudoers",
                   "/etc/sudoers.d", "/etc/ssl/private", "/etc/security/opasswd", "/etc/krb5.keytab",
                   "/etc/machine-id")


def package_root() -> str:
    """The directory holding the `agent` package (the worker imports it from there)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def is_within(path: str, parent: str) -> bool:
    """`path` equals `parent` or lies beneath it (both real paths)."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _real(path: str) -> str | None:
    try:
        return os.path.realpath(path) if os.path.lexists(path) else None
    except (OSError, ValueError):
        return None


def home_dir() -> str | None:
    home = os.environ.get("HOME") or os.path.expanduser("~")
    real = _real(home)
    return real if real and real != "/" else None


def secret_paths(home: str | None = None) -> list[str]:
    """Paths never granted, even inside a granted directory (real paths of those that exist)."""
    home = home_dir() if home is None else home
    names = list(_SYSTEM_SECRETS)
    if home:
        names += [os.path.join(home, s) for s in _HOME_SECRETS]
    out = []
    for n in names:
        real = _real(n)
        if real:
            out.append(real)
        elif os.path.isabs(n):
            out.append(os.path.normpath(n))  # not there yet: still never granted by name
    return sorted(set(out))


def python_dirs() -> list[str]:
    """The running interpreter's install: prefixes, the executable's directory, its site dirs, PYTHONPATH.

    Not the directory of whatever script is running (sys.path[0]): that may be /tmp or $HOME.
    """
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    dirs = {*prefixes, os.path.dirname(os.path.realpath(sys.executable)), os.path.dirname(sys.executable)}
    real_prefixes = [r for p in prefixes if (r := _real(p))]
    for p in sys.path:
        r = _real(p) if p else None
        if r and (any(is_within(r, pre) for pre in real_prefixes) or r.endswith(("site-packages", "dist-packages"))):
            dirs.add(r)
    dirs.update(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    # pyenv shims on PATH need the pyenv root (<root>/versions/<v> is the prefix).
    versions = os.path.dirname(os.path.realpath(sys.base_prefix))
    if os.path.basename(versions) == "versions":
        dirs.add(os.path.dirname(versions))
    return sorted({r for d in dirs if (r := _real(d)) and r != "/"})


def _path_dirs() -> list[str]:
    return [r for d in os.environ.get("PATH", "").split(os.pathsep) if d and (r := _real(d)) and os.path.isdir(r)]


def _extra_dirs() -> list[str]:
    """Operator additions: LUALLM_AGENT_SANDBOX_READ=/opt/tool:/home/me/.cargo (read + execute)."""
    raw = os.environ.get("LUALLM_AGENT_SANDBOX_READ", "")
    return [r for d in raw.split(os.pathsep) if d.strip() and (r := _real(d.strip()))]


def expand_excluding(grants: list[str], never: list[str], not_whole: list[str] | None = None) -> list[str]:
    """Real paths of `grants` with every `never` path carved out, and `not_whole` dirs left out.

    A grant inside a `never` path is dropped. A grant that contains an excluded path is replaced by
    its entries minus the one leading to the exclusion, recursively, so siblings stay readable. A
    `not_whole` directory ($HOME) is itself never granted, but grants beneath it stay.
    """
    never = [os.path.normpath(n) for n in never]
    soft = [os.path.normpath(n) for n in not_whole or []]
    out: set[str] = set()

    def carve(path: str) -> None:
        if path in soft or any(is_within(path, n) for n in never):
            return
        if not any(is_within(e, path) for e in (*never, *soft)):
            out.add(path)
            return
        if not os.path.isdir(path) or os.path.islink(path):
            return
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return
        for name in names:
            carve(os.path.join(path, name))

    for g in grants:
        real = _real(g)
        if real:
            carve(real)
    # Drop what another grant already covers.
    kept: list[str] = []
    for path in sorted(out):
        if not any(is_within(path, k) for k in kept):
            kept.append(path)
    return kept


def command_read_dirs() -> list[str]:
    """Read + execute for commands: system dirs, PATH, the Python install, operator additions."""
    grants = [*SYSTEM_DIRS, *_path_dirs(), *python_dirs(), *_extra_dirs()]
    return expand_excluding(grants, secret_paths(), _homes())


def worker_read_dirs() -> list[str]:
    """Read-only for the plan worker: shared libraries, the Python install and this package."""
    grants = [*_WORKER_SYSTEM_DIRS, *python_dirs(), os.path.join(package_root(), "agent")]
    return expand_excluding(grants, secret_paths(), _homes())


def _homes() -> list[str]:
    """Home directories never granted whole: $HOME, root's, and every /home/<user>."""
    homes = {h for h in (home_dir(), _real("/root")) if h}
    try:
        homes.update(os.path.join("/home", n) for n in os.listdir("/home"))
    except OSError:
        pass
    return sorted(homes)
