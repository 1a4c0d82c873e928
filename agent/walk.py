"""The one ignore-aware walk of a workspace: which files are the project's own.

Used for the workspace digest, the prompt's listing, a plan's `context.workspace.files` and the
plan tools `list`/`glob`/`grep`. A file is skipped when

* any component starts with a dot (`.git/`, `.env`, `.venv/`, temp files of atomic writes);
* it lies under a top-level bookkeeping directory (`receipts/`, `logs/`, lorch's `events/` …);
* git would ignore it: `.gitignore` at every level, `.git/info/exclude`, plus the project's own
  `.luallmignore` at the root, with git's semantics (last match wins, `!` re-includes, a deeper
  file overrides a shallower one, nothing inside an ignored directory can be re-included).

Matching uses `pathspec`'s `GitIgnoreSpec` (git's wildmatch rules) rather than hand-written globs.
Symbolic links are never followed; a link to a file is listed (the digest records its target).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agent.pathpolicy import BOOKKEEPING_DIRS

__all__ = ["IgnoreRules", "walk_files", "walk_dirs", "summarize_listing", "IGNORE_FILES", "BOOKKEEPING_DIRS",
           "LORCH_ROOT_FILES", "is_rule_file"]

# lorch's own files at the workspace root: configuration and a console log people redirect there.
LORCH_ROOT_FILES = frozenset({"lorch.json", "lorch-console.log"})
# Files whose change changes which files are ignored.
IGNORE_FILES = (".gitignore", ".luallmignore")
_ROOT_RULE_FILES = (".git/info/exclude", ".luallmignore")


def is_rule_file(rel: str) -> bool:
    """Does a change to workspace-relative `rel` change the ignore rules?"""
    return rel in _ROOT_RULE_FILES or rel.rsplit("/", 1)[-1] == ".gitignore"


def _load_spec(path: str) -> Any | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read(1024 * 1024).splitlines()
    except OSError:
        return None
    lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return None
    import pathspec  # lazily: only workspaces with ignore files pay for the import

    return pathspec.GitIgnoreSpec.from_lines(lines)


@dataclass
class IgnoreRules:
    """Git-style ignore rules of one workspace, loaded lazily per directory and cached."""

    root: str
    _specs: dict[str, Any | None] = field(default_factory=dict)  # dir rel ("" = root) -> spec
    _root_specs: list[Any] | None = None

    def _root_level(self) -> list[Any]:
        if self._root_specs is None:
            specs = [_load_spec(os.path.join(self.root, rel)) for rel in _ROOT_RULE_FILES]
            self._root_specs = [s for s in specs if s is not None]
        return self._root_specs

    def _dir_spec(self, dir_rel: str) -> Any | None:
        if dir_rel not in self._specs:
            self._specs[dir_rel] = _load_spec(os.path.join(self.root, dir_rel, ".gitignore"))
        return self._specs[dir_rel]

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Is `rel` ignored by the rules of its own ancestors? (Ancestors themselves not checked.)"""
        parts = rel.split("/")
        verdict: bool | None = None
        tail = rel + "/" if is_dir else rel
        for spec in self._root_level():
            hit = spec.check_file(tail).include
            if hit is not None:
                verdict = hit
        # Deeper .gitignore files are consulted later, so their verdict wins.
        for depth in range(len(parts)):
            dir_rel = "/".join(parts[:depth])
            spec = self._dir_spec(dir_rel)
            if spec is None:
                continue
            sub = "/".join(parts[depth:]) + ("/" if is_dir else "")
            hit = spec.check_file(sub).include
            if hit is not None:
                verdict = hit
        return bool(verdict)

    def path_ignored(self, rel: str) -> bool:
        """Is `rel` skipped by the walk: a dot-name, bookkeeping, or ignored itself or via a parent?"""
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts) or parts[0] in BOOKKEEPING_DIRS or rel in LORCH_ROOT_FILES:
            return True
        for i in range(1, len(parts)):
            if self.ignored("/".join(parts[:i]), is_dir=True):
                return True
        return self.ignored(rel)

    def forget(self) -> None:
        """Drop cached rule files (after one of them changed)."""
        self._specs.clear()
        self._root_specs = None


def _entries(path: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def walk_dirs(root: str, rules: IgnoreRules | None = None, start: str = "",
              excludes: Iterable[str] = BOOKKEEPING_DIRS,
              before_list: Callable[[str], None] | None = None) -> Iterator[tuple[str, list[str]]]:
    """(directory rel path, [file rel paths]) for every walked directory, parents first, sorted.

    `start` is a directory rel path to begin under (its own ancestors are not re-checked).
    `before_list(dir_rel)` runs before a directory is read (a watcher must watch before it lists,
    or a file created in between would be missed).
    """
    rules = rules if rules is not None else IgnoreRules(root)
    top_excludes = frozenset(excludes)
    stack = [start]
    while stack:
        dir_rel = stack.pop()
        if before_list is not None:
            before_list(dir_rel)
        files: list[str] = []
        subdirs: list[str] = []
        for entry in _entries(os.path.join(root, dir_rel) if dir_rel else root):
            name = entry.name
            if name.startswith("."):
                continue
            rel = f"{dir_rel}/{name}" if dir_rel else name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                # A link to a directory is neither walked nor listed (as os.walk does).
                if entry.is_symlink() and entry.is_dir():
                    continue
            except OSError:
                continue
            if is_dir:
                if not dir_rel and name in top_excludes:
                    continue
                if not rules.ignored(rel, is_dir=True):
                    subdirs.append(rel)
            elif not rules.ignored(rel) and not (not dir_rel and name in LORCH_ROOT_FILES):
                files.append(rel)
        yield dir_rel, files
        stack.extend(reversed(subdirs))


def walk_files(root: str, rules: IgnoreRules | None = None, start: str = "",
               excludes: Iterable[str] = BOOKKEEPING_DIRS) -> Iterator[str]:
    """Workspace-relative POSIX paths of the project's own files (regular files and links), sorted
    per directory, a directory's files before its subdirectories."""
    for _, files in walk_dirs(root, rules, start, excludes):
        yield from files


def _fold(prefix: str, members: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Lines for `members` (all under `prefix`) one level deep, and the members of each folded dir."""
    lines: list[str] = []
    groups: dict[str, list[str]] = {}
    for rel in members:
        rest = rel[len(prefix):]
        if "/" not in rest:
            lines.append(rel)
            continue
        d = prefix + rest.split("/", 1)[0] + "/"
        if d not in groups:
            groups[d] = []
            lines.append(d)
        groups[d].append(rel)
    return lines, groups


def summarize_listing(files: list[str], max_lines: int) -> list[str]:
    """A listing of at most `max_lines` lines: every file when they fit, else directories folded
    into `dir/ (N files)` lines, unfolding the smallest directories first while the budget lasts."""
    if len(files) <= max_lines:
        return list(files)
    lines, groups = _fold("", files)
    unfolded = True
    while unfolded:
        unfolded = False
        for _, d in sorted((len(groups[ln]), ln) for ln in lines if ln in groups):
            inner, inner_groups = _fold(d, groups[d])
            if len(lines) - 1 + len(inner) <= max_lines:
                at = lines.index(d)
                lines[at:at + 1] = inner
                del groups[d]
                groups.update(inner_groups)
                unfolded = True
                break
    out = [f"{ln} ({len(groups[ln])} files)" if ln in groups else ln for ln in lines]
    if len(out) > max_lines:
        out = out[:max_lines - 1] + [f"... and {len(out) - max_lines + 1} more entries"]
    return out
