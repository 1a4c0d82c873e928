"""A definition the goal names, asked for alone in plain text and merged into the file it names.

Measured (Qwen2.5-Coder-0.5B, real lorch, default settings, feature-cart: "Add a method
remove(name, quantity=1) to the Cart class in cart.py…", runs V, W, W2, W3, W4): asked for the
builder's JSON answer, it gave edits of text not in the file, or (held to the file's text, W4)
copied `add` into its edit unchanged, "No changes needed"; then cart.py whole with a bracket left
open. The task failed in every run. As with example_fix.py, the request for the one definition, in
plain text, is a frame a small model can fill; the agent puts it in its place (py_merge.py) and the
project's tests judge it like any other change.

Used by the builder when its answer loop gave no valid answer for `implement` or `implement_changes`,
and by the reviewer (an approval while one is missing is a request for it): the goal names
`name(params)` that the Python file it names does not define yet, as a function or, when the goal
says "method" and the file has the class, as a method of that class.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from dataclasses import dataclass

from agent.answers import strings_in
from agent.errors import AgentError, ShuttingDown
from agent.models.base import ModelRequest
from agent.roles.changes import FileWrite
from agent.roles.context import CommandContext
from agent.roles.example_fix import function_from_reply
from agent.roles.project_files import paths_named_in, project_files
from agent.roles.prompting import read_project_text
from agent.roles.py_merge import merge_definitions

__all__ = ["NewDefinition", "new_definitions_named", "write_named_definitions"]

_SYSTEM = ("You are a careful Python programmer. Reply with one ```python block holding only the "
           "definition asked for, then nothing else.")
_CALL = re.compile(r"(?<![.\w])([A-Za-z_]\w*)\(([^()]*)\)")  # not `x.values()`
_CLASS = re.compile(r"\b(?:class\s+([A-Z]\w*)|([A-Z]\w*)\s+class)\b")
_PARAMS = re.compile(r"\s*[A-Za-z_]\w*(\s*=\s*[^,]+)?\s*")
_MAX_NEW = 2
_TRIES = 2
_MAX_TOKENS = 700
_FILE_CHARS = 8000
_GOAL_CHARS = 2000


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


def _prompt(ctx: CommandContext, new: NewDefinition, source: str) -> str:
    goal = " ".join(strings_in(ctx.cmd.inputs))[:_GOAL_CHARS]
    what = (f"the method `def {new.name}(self{', ' if new.params else ''}{new.params}):` of class `{new.cls}`"
            if new.cls else f"the function `def {new.name}({new.params}):`")
    return "\n\n".join([
        f"Module {new.path}, as it is now:\n```python\n{source[:_FILE_CHARS].rstrip()}\n```",
        f"The goal: {goal}",
        f"Write {what} with its body, so that it does each thing the goal says of it. Work out the steps "
        "first, in one short comment line inside it. Reply with only that definition; the agent puts it "
        "in its place in the module.",
    ])


def _merged(source: str, new: NewDefinition, reply: str) -> str | None:
    fragment = function_from_reply(reply, new.name)
    if fragment is None:
        return None
    if new.cls:
        body = "\n".join(line for line in fragment.splitlines() if not line.startswith(("import ", "from ")))
        fragment = f"class {new.cls}:\n" + textwrap.indent(body.strip("\n") + "\n", "    ")
    merged = merge_definitions(source, fragment)
    if merged is None:
        return None
    try:
        tree = ast.parse(merged[0])
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return merged[0] if new.name in _defined(tree) else None


def write_named_definitions(ctx: CommandContext, wanted: list[NewDefinition]) -> tuple[list[FileWrite], list[str]]:
    """(the file with each wanted definition merged in, the names written); ([], []) unless every one
    came: a model's definition that does not parse or merge is asked for again, once."""
    model = ctx.require_model()
    sources: dict[str, str] = {}
    for new in wanted:
        source = sources.get(new.path) or read_project_text(ctx, new.path)
        if source is None:
            return [], []
        merged = None
        for attempt in range(1, _TRIES + 1):
            if ctx.seconds_left() < 20:
                return [], []
            ctx.progress(f"asking for {new.name} alone, to be put into {new.path} ({attempt} of {_TRIES})",
                         stage="implementing", progress=0.5)
            request = ModelRequest(messages=[{"role": "system", "content": _SYSTEM},
                                             {"role": "user", "content": _prompt(ctx, new, source)}],
                                   task_type="planning", role="builder", deadline=ctx.deadline,
                                   max_tokens=_MAX_TOKENS, temperature=0.2 if attempt == 1 else 0.8)
            try:
                merged = _merged(source, new, model.complete(request).text)
            except ShuttingDown:
                raise
            except AgentError as exc:
                ctx.log("warn", f"no definition of {new.name} came", reason=exc.message[:200])
                return [], []
            if merged is not None:
                break
        if merged is None:
            ctx.log("warn", f"no definition of {new.name} that fits {new.path} came", tries=_TRIES)
            return [], []
        sources[new.path] = merged
    names = [n.name for n in wanted]
    return [FileWrite(path, text, "named definition", [f"{', '.join(names)} written alone and put in place"])
            for path, text in sources.items()], names
