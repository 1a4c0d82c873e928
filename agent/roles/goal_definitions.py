"""Definitions a goal asks for: `name(params)` that the one Python file the goal names does not define.

The goal's words can only guide, never judge (the tests do): the builder's rounds ask once more
while one is missing after the tests pass, and the reviewer's approval while one is missing is a
request for it. A definition is a function or, when the goal says "method" and the file has the
class, a method of that class.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

from agent.answering.answer_spec import strings_in
from agent.command_context import CommandContext
from agent.project_files import paths_named_in, project_files
from agent.roles.prompting import read_project_text

__all__ = ["NewDefinition", "new_definitions_named"]

_CALL = re.compile(r"(?<![.\w])([A-Za-z_]\w*)\(([^()]*)\)")  # not `x.values()`
_CLASS = re.compile(r"\b(?:class\s+([A-Z]\w*)|([A-Z]\w*)\s+class)\b")
_PARAMS = re.compile(r"\s*[A-Za-z_]\w*(\s*=\s*[^,]+)?\s*")
_MAX_NEW = 2


@dataclass(frozen=True)
class NewDefinition:
    path: str
    name: str
    params: str
    cls: str | None  # the class it is a method of; None for a function


def _defined(tree: ast.Module) -> set[str]:
    """Names the module defines or imports, and Python's builtins (`len(items)` asks for nothing new)."""
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
    names |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)
              for a in n.names}
    return names | set(dir(builtins))


def new_definitions_named(ctx: CommandContext) -> list[NewDefinition]:
    """What the goal asks to add: `name(params)` the one Python file the goal names does not define."""
    goal = " ".join(strings_in(ctx.cmd.inputs))
    files = [p for p in paths_named_in([goal], project_files(ctx.workspace, 200)) if p.endswith(".py")]
    if len(files) != 1:
        return []
    source = read_project_text(ctx, files[0])
    if source is None:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    cls = None
    if re.search(r"\bmethods?\b", goal):  # of the class the goal names, else of the file's only class
        classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        named = [a or b for a, b in _CLASS.findall(goal)]
        cls = next((c for c in named if c in classes), classes[0] if len(classes) == 1 else None)
    known = _defined(tree)
    out: list[NewDefinition] = []
    for name, params in _CALL.findall(goal):
        if name in known or name in {d.name for d in out} or not all(_PARAMS.fullmatch(p) for p in params.split(",")
                                                                         if params.strip()):
            continue
        out.append(NewDefinition(files[0], name, params.strip(), cls))
    return out[:_MAX_NEW]
