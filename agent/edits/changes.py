"""The builder's files as changes, checked before anything is written.

Each file is checked on its own so that the message names exactly which one failed and why:

* a path must be a project file (no lorch or agent bookkeeping, no dot-path, inside the workspace);
* a file must not replace an existing file with a fraction of it (a small model may overwrite a
  class and its test file with one stub) — new content under 40% of the old lines when the old file had
  10 lines or more, every test of a test file gone, a class gone, or most of its named definitions
  gone;
* a whole-file answer for an existing Python file that holds only some of its definitions (the
  changed function alone) is merged into the file by `agent.edits.py_merge`, with a note, rather
  than refused — also when the file is small, if the answer left out a top-level definition;
* a Python file that compiled before must still compile after the answer's changes.

A plan's `tools.edit` needs its `old` text exactly once in the file; when it is not there, its error
names where old's first line is, or the file's nearest line, to copy from (`where_old_text_is`).
"""

from __future__ import annotations

import ast
import difflib
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from agent.errors import AgentError, InvalidAnswer, PathRejected
from agent.pathpolicy import MODEL
from agent.project_files import bookkeeping_reason, line_count
from agent.python_syntax import parse_python
from agent.workspace import Workspace

__all__ = ["ChangeError", "FileWrite", "planned_writes", "shrink_reason", "where_old_text_is", "is_test_path",
           "unchanged_code", "named_definitions"]

_SHRINK_RATIO = 0.4
_SHRINK_MIN_LINES = 10
_DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class|function|local\s+function)\s+([A-Za-z_][\w.:]*)", re.M)
_CLASS = re.compile(r"^\s*class\s+([A-Za-z_]\w*)", re.M)
_TEST_DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|function)\s+(test\w*)|^\s*(?:it|test)\s*\(", re.M)
_TEST_FILE = re.compile(r"(^|/)(tests?/|test_[^/]*$|[^/]*_test\.\w+$|[^/]*\.test\.\w+$|[^/]*_spec\.\w+$)")


def is_test_path(path: str) -> bool:
    """`tests/...`, `test_x.py`, `x_test.go`, `x.test.js`, `x_spec.rb`: a file of tests."""
    return _TEST_FILE.search(path) is not None


class ChangeError(InvalidAnswer):
    """One change cannot be applied; the message names the file or edit (repairable)."""


@dataclass
class FileWrite:
    path: str
    content: str
    source: str  # "files[0]", ... (the entry that produced this content)
    notes: list[str] = field(default_factory=list)  # what the agent placed or dropped, for the log
    merged_part: bool = False  # a whole file that held only part of the file on disk, merged into it


def shrink_reason(path: str, old: str, new: str) -> str | None:
    """Why writing `new` over `old` would destroy most of the file, or None."""
    old_lines, new_lines = line_count(old), line_count(new)
    if old_lines >= _SHRINK_MIN_LINES and new_lines < _SHRINK_RATIO * old_lines:
        return f"would replace {path} ({old_lines} lines) with {new_lines} lines"
    if _TEST_FILE.search(path) and _TEST_DEFINITION.search(old) and not _TEST_DEFINITION.search(new):
        return f"would remove every test from {path}"
    lost_classes = [c for c in dict.fromkeys(_CLASS.findall(old)) if c not in set(_CLASS.findall(new))]
    if lost_classes:
        return f"would remove class {', '.join(lost_classes[:6])} from {path}"
    old_defs = list(dict.fromkeys(_DEFINITION.findall(old)))
    if len(old_defs) >= 3:
        new_defs = set(_DEFINITION.findall(new))
        lost = [d for d in old_defs if d not in new_defs]
        if len(lost) * 2 >= len(old_defs):
            return f"would remove {', '.join(lost[:6])} from {path}"
    return None


_NEAREST_LINE_RATIO = 0.75  # difflib's ratio: `def add(name, …)` to `def add(self, name, …)` is 0.9


def where_old_text_is(content: str, old: str) -> str:
    """Where the first line of `old` (not found whole) is in `content`, or its nearest line: for a
    plan's `tools.edit` to say, so that the model can copy the real text."""
    first = next((ln.strip() for ln in old.splitlines() if ln.strip()), "")
    if not first:
        return "old is only whitespace"
    lines = content.splitlines()
    hits = [n for n, ln in enumerate(lines, 1) if first in ln]
    if not hits:
        # The nearest line, to copy from: told only that `def add(name, …)` is absent, a model
        # quotes it again; shown `def add(self, name, …)`, it can copy the real line.
        stripped = [ln.strip() for ln in lines]
        near = difflib.get_close_matches(first, stripped, n=1, cutoff=_NEAREST_LINE_RATIO)
        hint = ""
        if near:
            at = stripped.index(near[0])
            hint = f"; the nearest is line {at + 1}: {lines[at][:120]!r}"
        return f"not even its first line ({first[:80]!r}) is in the file{hint}"
    return (f"its first line ({first[:80]!r}) is at line {hits[0]}, but the lines after it differ: copy old "
            "exactly, with the same indentation")


def _check_path(ws: Workspace, path: str, where: str) -> str:
    ws.resolve(path)  # PathRejected for anything outside the workspace
    reason = bookkeeping_reason(path)
    if reason:
        raise PathRejected(f"{where}: the builder may not write {path}: {reason}", path=path)
    return ws.normalize(path)  # judged and keyed on the normalised path (`./a`, `src/../a` are `a`)


def unchanged_code(ws: Workspace, writes: list[FileWrite]) -> list[str]:
    """The writes' paths when every one rewrites an existing Python file into code that does the
    same (docstrings and layout aside); [] when any write changes behaviour or is not such a file.

    Why: asked for a fix, a small model may quote the function back as it was; merged, such a
    change alters only layout, the old tests still pass, and a reviewer may approve the bug.
    """
    paths = []
    for w in writes:
        old = _on_disk(ws, w.path) if w.path.endswith(".py") else None
        before = _behaviour(old) if old is not None else None
        if before is None or before != _behaviour(w.content):
            return []
        paths.append(w.path)
    return paths


_SHOWN_LINES = 60


def named_definitions(ws: Workspace, paths: list[str], text: str, limit: int = 2) -> list[str]:
    """The functions of `paths` that `text` names as `name(`, each quoted as an answer gives a file: its
    path on a line of its own, then its source fenced (a model shown another shape copies it, and a
    path inside the fence is no file path). A function over `_SHOWN_LINES` is cut with a line saying so:
    asked for a function "alone and whole", a model shown part of it as the whole writes that part."""
    wanted = set(re.findall(r"\b([A-Za-z_]\w*)\(", text))
    out: list[str] = []
    for path in paths:
        source = _on_disk(ws, path) if path.endswith(".py") else None
        tree = parse_python(source or "")
        if tree is None:
            continue
        lines = (source or "").splitlines()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in wanted and len(out) < limit:
                last = node.end_lineno or node.lineno
                end = min(last, node.lineno + _SHOWN_LINES - 1)
                cut = f"\n    # … {last - end} more lines of {node.name} …" if end < last else ""
                out.append(f"{path}\n```\n" + "\n".join(lines[node.lineno - 1:end]) + cut + "\n```")
    return out


def _behaviour(source: str) -> str | None:
    """The module's syntax tree without docstrings, as text (None when it does not parse)."""
    tree = parse_python(source)
    if tree is None:
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _on_disk(ws: Workspace, path: str) -> str | None:
    try:
        if not ws.is_file(path, policy=MODEL):
            return None
        return ws.read_text(path, policy=MODEL)
    except (AgentError, OSError):
        return None


def planned_writes(ws: Workspace, answer: dict[str, Any], *, merge_partial: bool = True) -> list[FileWrite]:
    """The files `answer["files"]` writes (`{path, content}` each), in order; raises on the first bad one.

    `merge_partial`: a whole file that holds only part of the file on disk is merged into it
    (strategy `merge_partial_file`); else it is judged as given.
    """
    pending: dict[str, FileWrite] = {}
    before: dict[str, str | None] = {}  # each path as it is on disk, read once

    def current(path: str) -> str | None:
        if path in pending:
            return pending[path].content
        if path not in before:
            before[path] = _on_disk(ws, path)
        return before[path]
    for i, f in enumerate(answer.get("files") or []):
        where = f"files[{i}]"
        path = _check_path(ws, f["path"], where)
        old = current(path)
        notes: list[str] = []
        text = f["content"]
        part = False
        if old is not None:
            why = shrink_reason(path, old, text)
            lost = [] if why else _lost_definitions(path, old, text)
            merged = _merged(path, old, text) if merge_partial and (why or lost) else None
            if merged is not None:
                (text, how), part = merged, True
                kept = f"kept {', '.join(lost[:6])}; " if lost else ""
                notes.append(f"{where} held only part of {path}: {kept}{how}")
                why = shrink_reason(path, old, text)
            elif lost and merged is None and len(lost) == len(_top_definitions(old) or ()):
                # A file answered with another file's content (its test file, say): every function
                # gone, nothing to merge, and the line count alike, so the shrink check misses it.
                why = f"would replace {path} with a file that has none of its definitions ({', '.join(lost[:6])})"
            if why:
                raise ChangeError(f"{where} {why}: keep every part of the file the task does not ask to remove",
                                  path=path)
        pending[path] = FileWrite(path, text, where, notes, merged_part=part)
    for write in pending.values():
        if write.path.endswith(".py"):
            _check_python(write, before.get(write.path))
    return list(pending.values())


def _top_definitions(source: str) -> list[str] | None:
    """The top-level functions and classes of Python source (None when it does not parse)."""
    tree = parse_python(source)
    if tree is None:
        return None
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]


def _lost_definitions(path: str, old: str, new: str) -> list[str]:
    """Top-level functions and classes of a Python file that `new` no longer defines."""
    before, after = (_top_definitions(old), _top_definitions(new)) if path.endswith(".py") else (None, None)
    if before is None or after is None:
        return []
    return [n for n in before if n not in set(after)]


def _merged(path: str, old: str, content: str) -> tuple[str, str] | None:
    """A Python answer that is only some definitions of the file, merged into it (`py_merge`)."""
    if not path.endswith(".py"):
        return None
    from agent.edits.py_merge import merge_definitions

    return merge_definitions(old, content)


def _check_python(write: FileWrite, before: str | None) -> None:
    """A Python file that compiled before (or is new) must still compile, and must not gain a
    second definition of a name in one scope: precise, repairable errors."""
    why, twice = _python_problems(write.content, write.path)
    if why is None and not twice:
        return
    why_before, twice_before = _python_problems(before, write.path) if before is not None else (None, [])
    if why is not None:
        if why_before is not None:
            return  # it did not compile before either: not this answer's doing
        raise ChangeError(f"{write.source}: after this change {write.path} is not valid Python: {why}",
                          path=write.path)
    already = {name for name, _ in twice_before}
    new_twice = [d for d in twice if d[0] not in already]
    if new_twice:
        # An edit whose new text repeats a neighbouring function defines it twice, and the later
        # copy silently wins.
        name, lines = new_twice[0]
        raise ChangeError(f"{write.source}: after this change {write.path} defines {name} twice (lines "
                          f"{', '.join(map(str, lines))}); change the one definition instead of adding another",
                          path=write.path)


def _python_problems(source: str, path: str) -> tuple[str | None, list[tuple[str, list[int]]]]:
    """(why it does not compile or None, names defined twice in one scope), from one parse."""
    try:
        with warnings.catch_warnings():  # a SyntaxWarning ("\\d" escapes) is not ours to print
            warnings.simplefilter("ignore")
            tree = ast.parse(source, path)
            compile(tree, path, "exec", dont_inherit=True)  # the compiler's own checks; nothing runs
    except SyntaxError as exc:
        line = (exc.text or "").strip()[:80]
        return f"line {exc.lineno}: {exc.msg}" + (f" ({line!r})" if line else ""), []
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        return str(exc)[:200] or type(exc).__name__, []
    twice: list[tuple[str, list[int]]] = []
    scopes: list[tuple[str, list[ast.stmt]]] = [("", tree.body)]
    scopes += [(f"{n.name}.", n.body) for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    for prefix, body in scopes:
        seen: dict[str, list[int]] = {}
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.decorator_list:
                seen.setdefault(prefix + node.name, []).append(node.lineno)
        twice += [(name, lines) for name, lines in seen.items() if len(lines) > 1]
    return None, twice
