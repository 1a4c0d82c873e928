"""Files written as text: a reply that gives each file whole in a fenced block under its path.

Code travels better as text than escaped inside JSON strings (Aider's "LLMs are bad at returning
code in JSON", and the same on small local models): the builder asks for

    path/to/file.py
    ```python
    <the whole file>
    ```

and this module reads the files back out of the reply. It reads the shapes models actually use
for the path (a line of its own, in backticks or bold, "File: x", a `# x` heading, or a first
comment line inside the block) and, for a block without any path, the one
project file whose definitions it shares (a method given alone, indented as in its class, too). It
only parses: what is written, and whether it is allowed, the caller decides.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from agent.fences import file_blocks
from agent.python_syntax import parse_python

__all__ = ["FencedFile", "files_in_reply", "open_file", "closed_fenced", "path_lines", "prose_of", "FORMAT_RULES",
           "begun_rest"]

FORMAT_RULES = ("Answer with every file you change or create, and no other: the file's path on a line of its "
                "own, then the whole new content of the file in a fenced code block (``` on the lines before and after it). "
                "Give each file complete, from its first line to its last: never leave parts out or write "
                "\"rest unchanged\". Say nothing else.")

# A path-like word is no path when a call's "(" follows it (`unittest.main()`, `self.items.get(`).
_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/(-])")
_COMMENT_PATH = re.compile(r"^\s*(?:#|//|--|/\*)\s*(?:File:\s*)?(\S+\.\w+)\s*(?:\*/)?\s*$", re.I)
_NOT_FILES = {"bash", "sh", "shell", "console", "terminal", "text", "output", "diff"}


@dataclass(frozen=True)
class FencedFile:
    path: str
    content: str
    how: str  # where the path came from: "line", "comment" or "definitions"


# How models write a path on the line before a block (any line naming a path is read; these are
# the shapes seen, for a caller that must spot one while the reply is still being written).
_PATH_LINE_SHAPES = (("", ""), ("`", "`"), ("**", "**"), ("### ", ""), ("File: ", ""))


def path_lines(path: str) -> tuple[str, ...]:
    """The lines a model writes before the block of `path`, in the shapes models use."""
    return tuple(f"{pre}{path}{post}" for pre, post in _PATH_LINE_SHAPES)


def _path_in(text: str, known: set[str]) -> str | None:
    """The path a line names: a known project path first, else the last path-like word."""
    found = [m.group(1).removeprefix("./") for m in _PATH.finditer(text)]
    for path in found:
        if path in known:
            return path
    return found[-1] if found else None


def _line_path(text: str, known: set[str]) -> str | None:
    """The path named on the last non-blank line of `text` (the line before a fence), if short enough
    to be a path line rather than prose."""
    lines = [line for line in text.splitlines() if line.strip()]
    return _path_in(lines[-1], known) if lines and len(lines[-1]) < 200 else None


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _top_nodes(source: str) -> list[ast.stmt]:
    tree = parse_python(textwrap.dedent(source))  # a method given alone keeps its class's indentation
    return tree.body if tree is not None else []


def _top_names(source: str) -> set[str]:
    return {n.name for n in _top_nodes(source) if isinstance(n, _DEFS)}


def _defined_names(source: str) -> set[str]:
    """A file's top-level definitions and its classes' methods: what a block of definitions may replace."""
    nodes = _top_nodes(source)
    return {n.name for n in nodes if isinstance(n, _DEFS)} | {
        m.name for c in nodes if isinstance(c, ast.ClassDef) for m in c.body if isinstance(m, _DEFS)}


def _by_definitions(body: str, sources: dict[str, str]) -> str | None:
    """The one Python file of `sources` the block shares the most definitions with (a file given whole
    without its path, or a function or method given alone: the writer merges that into its place)."""
    names = _top_names(body)
    if not names:
        return None
    scored = sorted(((len(names & _defined_names(text)), path) for path, text in sources.items()
                     if path.endswith(".py")), reverse=True)
    if scored and scored[0][0] > 0 and (len(scored) == 1 or scored[1][0] < scored[0][0]):
        return scored[0][1]
    return None


def files_in_reply(reply: str, known: set[str], sources: dict[str, str] | None = None) -> list[FencedFile]:
    """The files a reply gives, in order; a path given twice keeps its last block.

    `known`: the project's paths (a path they contain wins over other path-like words);
    `sources`: the code files shown to the model, to place a block that names no path."""
    out: dict[str, FencedFile] = {}
    last_end = 0
    for block in file_blocks(reply):
        body, lang = block.body, block.lang
        before = reply[last_end:block.start].strip()
        last_end = block.end
        path, how = None, ""
        line_path = _line_path(before, known)
        if lang in _NOT_FILES:
            continue  # a command to run or output shown, not a file
        if line_path:
            path, how = line_path, "line"
        first = body.split("\n", 1)[0]
        comment = _COMMENT_PATH.match(first)
        if path is None and comment:
            path, how = _path_in(comment.group(1), known), "comment"
        if path is None and sources:
            path, how = _by_definitions(body, sources), "definitions"
        if path is None or not body.strip():
            continue
        if how == "comment":
            body = body.split("\n", 1)[1] if "\n" in body else ""
            if _OPENING.match(body.split("\n", 1)[0]):
                # the path as a comment in a fence of its own, then the file's own opening fence
                # inside it (no code begins with a fence line)
                body = body.split("\n", 1)[1] if "\n" in body else ""
        out.pop(path, None)
        out[path] = FencedFile(path, body, how)
    return list(out.values())


_OPENING = re.compile(r"^[ \t]*(?:`{3,}|~{3,})([^\n`]*)$", re.M)


def begun_rest(rest: str) -> str:
    """What a model wrote after a reply begun with a file's path and opening fence, without a fence it
    opened again (that line is no code, and the file would not parse)."""
    stripped = rest.lstrip("\n")
    again = _OPENING.match(stripped)
    return stripped[again.end():].removeprefix("\n") if again else rest


def open_file(reply: str, known: set[str]) -> str | None:
    """The path of the file a reply began and never closed (a reply cut at its limit or in a loop):
    the path on the line before a fence opened after its last closed block;
    "" when the block names none, None when no block is left open."""
    blocks = file_blocks(reply)
    tail = reply[blocks[-1].end:] if blocks else reply
    opening = _OPENING.search(tail)
    if opening is None:
        return None
    return _line_path(tail[:opening.start()], known) or ""


def closed_fenced(reply: str) -> str:
    """`reply` with the block it left open closed (cut at a stop string that took the closing fence)."""
    return reply + ("\n```\n" if open_file(reply, set()) is not None else "")


def prose_of(reply: str) -> str:
    """The reply's words outside its code blocks and their path lines, as a one-line summary."""
    words, fenced = [], False
    lines = reply.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.strip() and not (i + 1 < len(lines)
                                                  and lines[i + 1].lstrip().startswith(("```", "~~~"))):
            words.append(line.strip())
    return " ".join(words)[:300]
