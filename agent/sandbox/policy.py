"""What a confined process may do, as plain data the launcher receives on its command line.

Built in the agent (which knows the boundary, the workspace and the private temp dir) and applied
by `confine` in the launcher's child or in the plan worker. Only the stdlib is imported.
"""

from __future__ import annotations

import json

__all__ = ["Policy", "MODES", "LANDLOCK_NS", "LANDLOCK", "BWRAP", "NONE"]

LANDLOCK_NS = "landlock+namespaces"   # Landlock + user/mount/net/pid/ipc namespaces
LANDLOCK = "landlock"                 # Landlock + a seccomp filter without sockets (no user namespaces)
BWRAP = "bubblewrap"                  # bubblewrap's namespaces and bind mounts (no Landlock)
NONE = "none"                         # no OS boundary (only with --unsandboxed-commands for commands)
MODES = (LANDLOCK_NS, LANDLOCK, BWRAP, NONE)


class Policy:
    """One confinement: the boundary to use and the paths it grants.

    tmp: private temp root (<tmp>/tmp is the command's /tmp, <tmp>/home its $HOME); home: the real
    $HOME, masked where mounts are possible; read: read-only paths; execute: read + execute paths;
    bwrap: the bwrap binary (mode bubblewrap). A plain class: the launcher must start fast.
    """

    _FIELDS = ("mode", "workspace", "tmp", "home", "read", "execute", "landlock_abi", "bwrap")

    def __init__(self, mode: str, workspace: str, *, tmp: str | None = None, home: str | None = None,
                 read: list[str] | None = None, execute: list[str] | None = None, landlock_abi: int = 0,
                 bwrap: str | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown sandbox mode {mode!r}")
        self.mode = mode
        self.workspace = workspace
        self.tmp = tmp
        self.home = home
        self.read = list(read or [])
        self.execute = list(execute or [])
        self.landlock_abi = landlock_abi
        self.bwrap = bwrap

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self._FIELDS}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Policy:
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)

        def paths(key: str) -> list[str]:
            value = data.get(key)
            return [str(p) for p in value] if isinstance(value, list) else []

        abi = data.get("landlock_abi")
        return cls(str(data.get("mode")), str(data.get("workspace")), tmp=text("tmp"), home=text("home"),
                   read=paths("read"), execute=paths("execute"), landlock_abi=abi if isinstance(abi, int) else 0,
                   bwrap=text("bwrap"))

    @classmethod
    def from_json(cls, text: str) -> Policy:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a policy is a JSON object")
        return cls.from_dict(data)
