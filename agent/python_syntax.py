"""Python source read as a syntax tree, or None: one guard for the many places that look at code.

Model-written or half-edited files are often not valid Python, and `ast.parse` fails in several ways
(a syntax error, NUL bytes, absurd nesting); none of them is the caller's error to raise. A
SyntaxWarning ("\\d" in a string) is the file's, not the agent's, to print.
"""

from __future__ import annotations

import ast
import warnings

__all__ = ["parse_python"]


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module | None:
    """The module's syntax tree, or None when it does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source, filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
