"""What a confined process may do, as plain data the launcher receives on its command line.

Built in the agent (which knows the boundary, the workspace and the private temp dir) and applied
by `confine` in the launcher's child or in the plan worker. On the launcher's command line it is
`key=value` lines (`to_text`), not JSON: importing json (and with it re and enum) would cost the
launcher a good part of its start-up. Nothing is imported at all.
"""

from __future__ import annotations

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

    _FIELDS = ("mode", "workspace", "tmp", "home", "read", "execute", "landlock_abi", "bwrap", "protect")
    _LISTS = ("read", "execute", "protect")

    def __init__(self, mode: str, workspace: str, *, tmp: str | None = None, home: str | None = None,
                 read: list[str] | None = None, execute: list[str] | None = None, landlock_abi: int = 0,
                 bwrap: str | None = None, protect: list[str] | None = None) -> None:
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
        self.protect = list(protect or [])  # directories inside the workspace seen read-only

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self._FIELDS}

    def to_text(self) -> str:
        """`key=value` lines, one per list item; a value with a newline is refused."""
        lines = []
        for key in self._FIELDS:
            value = getattr(self, key)
            for item in value if isinstance(value, list) else [value]:
                if item is None:
                    continue
                text = str(item)
                if "\n" in text or "\0" in text:
                    raise ValueError(f"policy {key} contains a newline or NUL: {text!r}")
                lines.append(f"{key}={text}")
        return "\n".join(lines)

    @classmethod
    def from_text(cls, text: str) -> Policy:
        data: dict[str, object] = {k: [] for k in cls._LISTS}
        for line in text.split("\n"):
            key, sep, value = line.partition("=")
            if not sep or key not in cls._FIELDS:
                raise ValueError(f"bad policy line {line!r}")
            if key in cls._LISTS:
                listed = data[key]
                assert isinstance(listed, list)
                listed.append(value)
            else:
                data[key] = int(value) if key == "landlock_abi" else value
        return cls.from_dict(data)

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
                   bwrap=text("bwrap"), protect=paths("protect"))
