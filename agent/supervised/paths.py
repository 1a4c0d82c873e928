"""Where a task-graph node's path lands, and whether it may go there.

Order (first refusal wins, each with its exact message): the config's `blocked_paths`; the home's
protection classes (`config.json`, `skills/allowed/`); inside the run's workspace or one of the
config's `allowed_paths`. The write itself then goes through `Workspace` with the model's path
policy plus the home's protected paths as a deny list — the one policy every door uses — so
dot-paths, bookkeeping directories and symlinks are refused there too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agent.errors import PathRejected
from agent.pathpolicy import MODEL, PathPolicy
from agent.workspace import Workspace

__all__ = ["expand_user", "NodePaths", "Located"]


def expand_user(path: str) -> str:
    return os.path.expanduser(path.strip())


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _lexical(path: str) -> str:
    """Absolute, `..` folded, the existing prefix resolved (a link in the prefix counts where it points)."""
    path = os.path.normpath(path)
    head, tail = path, ""
    while head != "/" and not os.path.exists(head):
        head, name = os.path.split(head)
        tail = os.path.join(name, tail) if tail else name
    real = os.path.realpath(head)
    return os.path.join(real, tail) if tail else real


@dataclass(frozen=True)
class Located:
    workspace: Workspace
    rel: str
    policy: PathPolicy
    shown: str

    @property
    def absolute(self) -> Path:
        return self.workspace.root / self.rel


@dataclass(frozen=True)
class NodePaths:
    """Path decisions for one run: its workspace, the config's lists, the home's protected paths."""

    workspace: Path
    allowed_paths: tuple[str, ...]
    blocked_paths: tuple[str, ...]
    protected: tuple[Path, ...]          # files, or directories (skills/allowed/)

    def locate(self, path: str) -> Located:
        """The workspace and relative path `path` names, or PathRejected with the reason."""
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            raise PathRejected(f"invalid path {path!r}", path=str(path), reason="empty")
        raw = expand_user(path)
        absolute = raw if os.path.isabs(raw) else os.path.join(self.workspace, raw)
        real = _lexical(absolute)
        for blocked in self.blocked_paths:
            if _under(real, _lexical(expand_user(blocked))):
                raise PathRejected(f"{path} is blocked by config.json blocked_paths ({blocked})", path=path,
                                   reason="protected")
        for prot in self.protected:
            if _under(real, os.path.realpath(prot)):
                raise PathRejected(f"{path} is protected: the agent never writes {prot.name} in its home "
                                   "(human-managed)", path=path, reason="protected")
        roots = [str(self.workspace)] + [_lexical(expand_user(p)) for p in self.allowed_paths
                                         if not any(c in p for c in "*?[")]
        for root in roots:
            real_root = os.path.realpath(root)
            if _under(real, real_root):
                rel = os.path.relpath(real, real_root)
                if rel == ".":
                    raise PathRejected(f"{path} is a directory, not a file", path=path, reason="not_a_file")
                return Located(Workspace(real_root), rel, self.policy_for(Path(real_root)), path)
        raise PathRejected(f"{path} is outside the workspace and config.json allowed_paths", path=path,
                           reason="outside")

    def policy_for(self, root: Path) -> PathPolicy:
        """The model's policy plus the home's protected paths that lie inside `root`."""
        deny: list[str] = []
        for prot in self.protected:
            real = os.path.realpath(prot)
            if _under(real, str(root)):
                rel = os.path.relpath(real, root)
                deny.append(rel + "/" if os.path.isdir(real) else rel)
        return MODEL.denying(*deny, reason="the agent home's config.json or skills/allowed/") if deny else MODEL
