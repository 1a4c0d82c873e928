"""Which files a skill may open: its declared `paths` globs, the config's allowed/blocked paths,
and the home's protection classes (seed 000 §2, §4.3). One decision function, used by the worker.

Order of checks (first failure wins, each with its exact message): not in a blocked path; for a
write, not inside `skills/allowed/`, `config.json` or the audit state; inside the base directory
(the plan's workspace, or the test run's scratch directory) or one of the config's allowed paths;
and matching one of the skill's declared globs. Paths are compared after resolving symlinks, so a
link cannot smuggle a read of `/etc/passwd` through a declared directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from agent.globs import glob_regex

__all__ = ["PathDenied", "SkillPathPolicy", "glob_matches", "expand"]


class PathDenied(Exception):
    """The skill may not open this path; `message` is what the skill and the audit log see."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def expand(pattern: str, base: str) -> str:
    """`~` expanded; relative patterns anchored at `base`; the literal prefix resolved (symlinks)."""
    pattern = os.path.expanduser(pattern.strip())
    if not os.path.isabs(pattern):
        pattern = os.path.join(base, pattern[2:] if pattern.startswith("./") else pattern)
    parts = pattern.split("/")
    literal = []
    for part in parts:
        if any(c in part for c in "*?["):
            break
        literal.append(part)
    prefix = "/".join(literal) or "/"
    rest = parts[len(literal):]
    real = os.path.realpath(prefix)
    return "/".join([real.rstrip("/"), *rest]) if rest else real



def glob_matches(pattern: str, path: str) -> bool:
    """A glob over absolute paths: `*` within one component, `**` across; a directory matches its tree."""
    if not any(c in pattern for c in "*?"):
        return path == pattern or path.startswith(pattern.rstrip("/") + "/")
    return bool(glob_regex(pattern).match(path))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@dataclass(frozen=True)
class SkillPathPolicy:
    """The decision for one skill in one run."""

    skill: str
    declared: tuple[str, ...]
    base_dir: str
    allowed_paths: tuple[str, ...]
    blocked_paths: tuple[str, ...]
    read_only_roots: tuple[str, ...]          # skills/allowed/, config.json, the audit log

    def resolve(self, path: str) -> str:
        """The absolute, symlink-resolved path `path` names (relative to the base directory)."""
        if not path or "\x00" in path:
            raise PathDenied("invalid path")
        raw = os.path.expanduser(path)
        return os.path.realpath(raw if os.path.isabs(raw) else os.path.join(self.base_dir, raw))

    def check(self, path: str, write: bool) -> str:
        """The real path to open, or PathDenied with the reason."""
        real = self.resolve(path)
        for blocked in self.blocked_paths:
            if _under(real, expand(blocked, self.base_dir)):
                raise PathDenied(f"path is blocked by config: {path}")
        if write:
            for root in self.read_only_roots:
                if _under(real, root):
                    raise PathDenied(f"path is read-only for skills: {path}")
        roots = [os.path.realpath(self.base_dir), *(expand(p, self.base_dir) for p in self.allowed_paths)]
        if not any(_under(real, root) for root in roots):
            raise PathDenied(f"path not in allowed list: {path}")
        if not any(glob_matches(expand(p, self.base_dir), real) for p in self.declared):
            raise PathDenied(f"path not declared in skill metadata: {path}")
        return real
