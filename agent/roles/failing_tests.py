"""The code of the failing tests a prompt quotes the tracebacks of.

A unittest traceback names the test and its failing line, not what the test built before it: for
`self.assertEqual(tick(matrix), expected)` the model sees neither `matrix = []` nor `expected`.
pytest prints the test's source above its error; a developer reading unittest's output opens the
test. The builder's rounds quote the test functions the shown tracebacks run through.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from agent.edits.changes import is_test_path
from agent.python_syntax import parse_python

__all__ = ["Reader", "failing_test_code"]

Reader = Callable[[str], "str | None"]  # a workspace file's text by its relative path, None if unreadable

_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>[\w.<>]+)')
_LINES = 25  # of one test: from its def, or its last lines up to the failing one
_TESTS = 3


def frames(output: str) -> list[tuple[str, int, str]]:
    """(path, line, function) of every traceback frame in `output`, in order."""
    return [(m["path"], int(m["line"]), m["func"]) for m in _FRAME.finditer(output)]


def _frames(output: str, shown: str) -> list[tuple[str, int, str]]:
    """(path, line, function) of the frames in test files of the tests `shown` names, test functions
    first (unittest and pytest collect functions named test*; a helper they call is the second
    choice), in the order shown. Frames come from the whole `output`: a quoted traceback may be cut."""
    found = [f for f in frames(output) if is_test_path(f[0]) and f[2].split(".")[-1] in shown]
    tests = [f for f in found if f[2].split(".")[-1].startswith("test")]
    return sorted(dict.fromkeys(tests or found), key=lambda f: shown.find(f[2].split(".")[-1]))


def _enclosing(tree: ast.AST, line: int, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name.split(".")[-1] \
                and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno > best.lineno:
                best = node
    return best


def failing_test_code(read: Reader, output: str, shown: str, chars: int) -> str:
    """The source of up to three test functions of the failures `shown` quotes from `output`, each up
    to its failing line, within `chars`. Empty when none is found (output of another language, a file
    not in the workspace, a test that does not parse) or each is its failing line alone, which the
    traceback shows already."""
    parts: list[str] = []
    seen: set[tuple[str, str]] = set()
    room = chars
    for path, line, func in _frames(output, shown):
        if (path, func) in seen or len(parts) >= _TESTS:
            continue
        seen.add((path, func))
        text = read(path) if path.endswith(".py") else None
        tree = parse_python(text) if text else None
        node = _enclosing(tree, line, func) if tree is not None else None
        if node is None or text is None:
            continue
        lines = text.splitlines()
        start = max(node.lineno, line - _LINES + 1)
        if line - start < 2:
            continue
        body = "\n".join(lines[start - 1:line])
        part = f"{path} lines {start}–{line}:\n```\n{body}\n```"
        if len(part) > room:
            continue
        parts.append(part)
        room -= len(part) + 1
    return "\n".join(parts)
