"""What the model sees of the workspace: the project's own files, never lorch's or our bookkeeping.

lorch keeps its run state next to the project (`lorch.json`, `lorch-console.log`, `events/`,
`state/`, `receipts/`, `logs/`, `snapshots/`, `transcripts/`) and the loop's feedback in
`reviews/` and `spec_notes/`. A small model shown those names copies them into its answer (seen:
a builder "implementing" `lorch.json`), so listings hide them and the builder may not write them.
Whether a path is inside the workspace at all is still `workspace`'s decision alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent.workspace import DIGEST_EXCLUDES, Workspace

__all__ = ["new_paths_named", "BOOKKEEPING_DIRS", "BOOKKEEPING_FILES", "FEEDBACK_DIRS", "bookkeeping_reason", "project_files",
           "paths_named_in", "line_count"]

BOOKKEEPING_DIRS = frozenset(DIGEST_EXCLUDES)
FEEDBACK_DIRS = frozenset({"reviews", "spec_notes"})
BOOKKEEPING_FILES = frozenset({"lorch.json", "lorch-console.log"})
# A path-looking word: at least one dot-extension or slash, no spaces or quotes.
_PATHISH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z0-9]{1,8})(?![\w/])")


def bookkeeping_reason(rel: str) -> str | None:
    """Why `rel` is not a project file (a short phrase), or None when it is one."""
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts:
        return "it names the workspace root, not a file"
    if any(p.startswith(".") for p in parts):
        return "dot-paths (hidden files and directories) are not project files"
    top = parts[0]
    if top in BOOKKEEPING_DIRS:
        return f"{top}/ holds lorch's or the agent's bookkeeping"
    if top in FEEDBACK_DIRS:
        return f"{top}/ holds the review loop's feedback, written by the reviewer and spec maintainer"
    if len(parts) == 1 and (top in BOOKKEEPING_FILES or top.startswith("lorch-")):
        return f"{top} is lorch's own file"
    return None


def project_files(workspace: Workspace, limit: int = 200) -> list[str]:
    """The project's own files (sorted walk order), at most `limit`."""
    out: list[str] = []
    for rel in workspace.iter_files():
        if bookkeeping_reason(rel) is None:
            out.append(rel)
            if len(out) >= limit:
                break
    return out


_FILE_KINDS = frozenset("py pyi md rst txt json toml yaml yml cfg ini csv js ts jsx tsx go rs c h cc cpp hpp java "
                        "kt rb php sh lua html css sql".split())


def new_paths_named(texts: Iterable[str], existing: Iterable[str]) -> list[str]:
    """Paths the texts name that are no project file and no file name of one: files to create, in order."""
    existing = list(existing)
    known = set(existing) | {rel.rsplit("/", 1)[-1] for rel in existing}
    found: list[str] = []
    for text in texts:
        for word in _PATHISH.findall(text):
            word = word.removeprefix("./")
            # a file kind by its extension, so `stats.mean(…)` or "e.g." name no file
            if word.rpartition(".")[2].lower() in _FILE_KINDS and word not in known and word not in found \
                    and bookkeeping_reason(word) is None:
                found.append(word)
    return found


def paths_named_in(texts: Iterable[str], existing: Iterable[str]) -> list[str]:
    """Existing project files that the texts mention by path or by unique file name, in order."""
    existing = list(existing)
    by_name: dict[str, list[str]] = {}
    for rel in existing:
        by_name.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
    known = set(existing)
    found: list[str] = []
    for text in texts:
        for word in _PATHISH.findall(text):
            word = word.strip("./") if word.startswith("./") else word
            if word in known:
                hit = word
            elif len(by_name.get(word, [])) == 1:
                hit = by_name[word][0]
            else:
                continue
            if hit not in found:
                found.append(hit)
    return found


def line_count(text: str) -> int:
    """Lines as an editor numbers them (a final newline does not start a new line)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)
