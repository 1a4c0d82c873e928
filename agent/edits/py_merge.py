"""Put a Python fragment's definitions in their places in the file it was meant for.

Small models asked for a whole file often answer with just the function they changed (a class
file given back as one method, a module as the fixed function alone). Written as-is that would destroy the file, so the answer is refused;
but its meaning is plain, and a person would merge it: a definition whose name the file already
has replaces it, a method goes into the class, anything new is added. Only fragments made of
definitions (and imports) are merged; anything else is refused as before.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from agent.python_syntax import parse_python

__all__ = ["merge_definitions"]

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class _Op:
    start: int  # first line replaced (1-based); an insertion has end == start - 1
    end: int
    text: list[str]
    what: str


def _first_line(node: _Def) -> int:
    return min([node.lineno] + [d.lineno for d in node.decorator_list])


def _segment(lines: list[str], node: ast.stmt) -> list[str]:
    start = _first_line(node) if isinstance(node, _Def) else node.lineno
    return textwrap.dedent("".join(lines[start - 1:node.end_lineno])).splitlines(keepends=True)


def _indented(segment: list[str], indent: str) -> list[str]:
    return [indent + line if line.strip() else line for line in segment]


def _body_indent(cls: ast.ClassDef, lines: list[str]) -> str:
    first = cls.body[0]
    line = lines[first.lineno - 1]
    return line[:len(line) - len(line.lstrip())]


def _uses_self(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(fn))


def _is_stub(node: ast.stmt) -> bool:
    """A body of only a docstring, `pass`, `...` or `raise NotImplementedError`."""
    body = getattr(node, "body", [])
    for stmt in body:
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue
        if isinstance(stmt, ast.Raise) and "NotImplementedError" in ast.dump(stmt):
            continue
        return False
    return True


def _replace(target: ast.stmt, node: ast.stmt) -> bool:
    """Whether `node` may replace `target`: never a real body by a stub."""
    return not _is_stub(node) or _is_stub(target)


def _as_method(segment: list[str], fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[str], bool]:
    """The segment with `self` added as first parameter when its body uses self but lacks it."""
    args = fn.args.posonlyargs + fn.args.args
    if (args and args[0].arg in ("self", "cls")) or not _uses_self(fn):
        return segment, False
    out = list(segment)
    for i, line in enumerate(out):
        head = f"def {fn.name}("
        at = line.find(head)
        if at >= 0:
            cut = at + len(head)
            out[i] = line[:cut] + ("self, " if args or fn.args.vararg or fn.args.kwonlyargs else "self") + line[cut:]
            return out, True
    return segment, False


def _blank_before(text: list[str]) -> list[str]:
    return ["\n"] + text


def merge_definitions(old: str, fragment: str) -> tuple[str, str] | None:
    """(`old` with the fragment's definitions in place, a note saying what went where), or None
    when the fragment is not definitions only, or a definition has no one clear place."""
    old_tree = parse_python(old)
    frag_source = _leading_tabs_as_spaces(textwrap.dedent(fragment))
    frag_tree = parse_python(frag_source)
    if old_tree is None or frag_tree is None or not frag_tree.body:
        return None
    lines = old.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    frag_lines = frag_source.splitlines(keepends=True)
    if frag_lines and not frag_lines[-1].endswith("\n"):
        frag_lines[-1] += "\n"
    top = {n.name: n for n in old_tree.body if isinstance(n, _Def)}
    classes = [n for n in old_tree.body if isinstance(n, ast.ClassDef)]
    ops: list[_Op] = []
    for node in frag_tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring of the fragment: the file keeps its own
        if isinstance(node, ast.Import | ast.ImportFrom):
            op = _import(node, frag_lines, lines, old_tree)
            if op is not None:
                ops.append(op)
            continue
        if not isinstance(node, _Def):
            return None
        segment = _segment(frag_lines, node)
        placed = _place(node, segment, top, classes, lines)
        if placed is None:
            return None
        ops += placed
    if not any(op.what for op in ops):
        return None
    merged = _apply(lines, ops)
    notes = [op.what for op in ops if op.what]
    return merged, "; ".join(notes)


def _leading_tabs_as_spaces(text: str) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        body = line.lstrip(" \t")
        out.append(line[:len(line) - len(body)].expandtabs(4) + body)
    return "".join(out)


def _method_of(classes: list[ast.ClassDef], name: str) -> tuple[ast.ClassDef, ast.stmt] | None:
    hits = [(c, m) for c in classes for m in c.body
            if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and m.name == name]
    return hits[0] if len(hits) == 1 else None


def _place(node: _Def, segment: list[str], top: dict[str, _Def], classes: list[ast.ClassDef],
           lines: list[str]) -> list[_Op] | None:
    name = node.name
    if name in top:
        target = top[name]
        if isinstance(node, ast.ClassDef) and isinstance(target, ast.ClassDef):
            return _merge_class(node, segment, target, lines)
        if isinstance(node, ast.ClassDef) != isinstance(target, ast.ClassDef) or not _replace(target, node):
            return None
        return [_Op(_first_line(target), target.end_lineno or target.lineno, segment, f"replaced {name}")]
    if isinstance(node, ast.ClassDef):
        return [_Op(len(lines) + 1, len(lines), _blank_before(["\n"] + segment), f"added class {name}")]
    hit = _method_of(classes, name)
    if hit is not None:
        cls, method = hit
        if not _replace(method, node):
            return None
        text, fixed = _as_method(segment, node)
        return [_Op(_first_line(method), method.end_lineno or method.lineno,  # type: ignore[arg-type]
                    _indented(text, _body_indent(cls, lines)),
                    f"replaced {cls.name}.{name}" + (" (self added)" if fixed else ""))]
    args = node.args.posonlyargs + node.args.args
    is_method = (args and args[0].arg == "self") or _uses_self(node)
    if is_method:
        if len(classes) != 1:
            return None  # a method, but of which class?
        cls = classes[0]
        text, fixed = _as_method(segment, node)
        end = cls.end_lineno or cls.lineno
        return [_Op(end + 1, end, _blank_before(_indented(text, _body_indent(cls, lines))),
                    f"added {cls.name}.{name}" + (" (self added)" if fixed else ""))]
    return [_Op(len(lines) + 1, len(lines), _blank_before(["\n"] + segment), f"added {name}")]


def _merge_class(node: ast.ClassDef, segment: list[str], target: ast.ClassDef, lines: list[str]) -> list[_Op] | None:
    """A fragment class whose name the file has: its methods replace or join the file's class."""
    frag = textwrap.dedent("".join(segment))
    frag_lines = frag.splitlines(keepends=True)
    ops: list[_Op] = []
    indent = _body_indent(target, lines)
    existing = {m.name: m for m in target.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)}
    first = _first_line(node)
    for member in node.body:
        if isinstance(member, ast.Expr) and isinstance(member.value, ast.Constant):
            continue
        if isinstance(member, ast.Pass):
            continue
        if not isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
            return None  # class attributes: too easy to get wrong by merging
        # line numbers of `member` are relative to the fragment the class came from
        start = _first_line(member) - first + 1
        text = textwrap.dedent("".join(frag_lines[start - 1:(member.end_lineno or member.lineno) - first + 1]))
        seg = _indented(text.splitlines(keepends=True), indent)
        if member.name in existing:
            m = existing[member.name]
            if not _replace(m, member):
                return None
            ops.append(_Op(_first_line(m), m.end_lineno or m.lineno, seg, f"replaced {target.name}.{member.name}"))
        else:
            end = target.end_lineno or target.lineno
            ops.append(_Op(end + 1, end, _blank_before(seg), f"added {target.name}.{member.name}"))
    return ops


def _import(node: ast.Import | ast.ImportFrom, frag_lines: list[str], lines: list[str], tree: ast.Module) -> _Op | None:
    text = "".join(frag_lines[node.lineno - 1:node.end_lineno]).strip()
    if any(line.strip() == text for line in lines):
        return None
    defined = {n.name for n in tree.body if isinstance(n, _Def)}
    if isinstance(node, ast.ImportFrom) and node.names and all(a.name in defined for a in node.names):
        # The file importing what it defines itself (`from mathutil import clamp` in mathutil.py)
        # is a circular import that would break every test of the module.
        return None
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    if imports:
        at = (imports[-1].end_lineno or imports[-1].lineno) + 1
    elif tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(getattr(tree.body[0], "value", None),
                                                                          ast.Constant):
        at = (tree.body[0].end_lineno or tree.body[0].lineno) + 1
    else:
        at = 1
    return _Op(at, at - 1, [text + "\n"], f"imported {text[:60]}")


def _apply(lines: list[str], ops: list[_Op]) -> str:
    out = list(lines)
    # bottom first, so earlier line numbers stay valid; insertions at one place keep their order
    for op in sorted(enumerate(ops), key=lambda p: (p[1].start, p[0]), reverse=True):
        o = op[1]
        out[o.start - 1:o.end] = o.text
    return "".join(out)
