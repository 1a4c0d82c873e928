"""The goal's own examples, run on the code: `fahrenheit_to_celsius(212) must return 100.0`.

Task goals often carry worked examples (`f(x) == y`, `f(x) returns y`, `f(x) must return y`).
They are the one check of the code that no model wrote: the agent finds them in the command's
inputs, runs each inside the OS sandbox (like the tests) against the workspace as it is, and
reports what each call returned. Why: a builder and a reviewer may both have an example in their
prompt and still answer "No changes needed" or approve code that breaks it; neither runs it, the
agent does.

Only calls of a plain function with literal arguments and a literal expected value are taken
(`ast.literal_eval` decides); the function is looked up among the workspace's top-level Python
definitions. A goal without such examples costs nothing.
"""

from __future__ import annotations

import ast
import re
import shlex
import sys
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

import orjson

from agent.answering.answer_spec import strings_in
from agent.answering.strategies import applied, enabled
from agent.command_context import CommandContext
from agent.edits.changes import is_test_path
from agent.errors import AgentError, ShuttingDown
from agent.project_files import project_files
from agent.python_syntax import parse_python
from agent.roles.prompting import read_project_text
from agent.test_command import run_tests

__all__ = ["Example", "examples_in", "examples_of", "run_examples", "run_goal_examples", "examples_section",
           "said"]

_CALL = r"\b([A-Za-z_]\w*)\(((?:[^()\"']|\"[^\"]*\"|'[^']*'|\([^()]*\))*)\)"
_VERB = r"\s*(?:==|(?:must|should|will)?\s*(?:still\s+)?(?:returns?|gives?|is)\b)\s*"
_EXAMPLE = re.compile(_CALL + _VERB)
_RAISES = re.compile(_CALL + r"\s*(?:(?:must|should|will)\s+(?:still\s+)?raise|raises)\s+(?:an?\s+)?([A-Z]\w*)\b")
_MAX = 8
_NOT_WANTED = re.compile(r"\b(?:today|currently|now|wrongly|used to)\W+(?:\w+\W+){0,2}$", re.I)
_NOT_WANTED_AFTER = re.compile(r"[ \t]*(?:today|currently|now|at the moment|instead)\b", re.I)


@dataclass(frozen=True)
class Example:
    name: str
    args: str  # the literal arguments as written, e.g. `212` or `[1, 2, 3, 4]`
    expected: str  # the literal as written, e.g. `100.0`, or `raises ValueError`

    @property
    def call(self) -> str:
        return f"{self.name}({self.args})"

    @property
    def claim(self) -> str:
        """`f(212) == 100.0`, `mean([]) raises ValueError`."""
        return f"{self.call} {self.expected}" if self.expected.startswith(_RAISING) else f"{self.call} == {self.expected}"


_RAISING = "raises "


def said(expected: str) -> str:
    """What the goal says, in a sentence: `100.0`, `it raises ValueError`."""
    return f"it {expected}" if expected.startswith(_RAISING) else expected


def _literal_prefix(text: str) -> str | None:
    """The longest prefix of `text` (up to a sentence end) that is one Python literal."""
    text = text.lstrip()
    ends = sorted({m.start() for m in re.finditer(r"[,;.]?(?:\s|$)", text)} | {len(text)}, reverse=True)
    for end in ends:
        candidate = text[:end].rstrip()
        if candidate.endswith(".") and not candidate.endswith(".."):
            candidate = candidate[:-1]  # the sentence's full stop, not part of `5.`
        if not candidate:
            continue
        try:
            ast.literal_eval(candidate)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        return candidate
    return None


def examples_in(texts: list[str]) -> list[Example]:
    """Each `call <verb> literal` with literal arguments, in order, without repeats (at most 8)."""
    found: list[Example] = []
    for text in texts:
        for m in _EXAMPLE.finditer(text):
            name, args = m.group(1), m.group(2).strip()
            if not _literal_args(args):
                continue
            expected = _literal_prefix(text[m.end():])
            after = text[m.end():].lstrip()[len(expected or ""):]
            if expected is None or _NOT_WANTED.search(text[max(0, m.start() - 30):m.start()]) \
                    or _NOT_WANTED_AFTER.match(after):
                continue  # "today f(1) returns 3", "f(1) returns 3 today": what is, not what should be
            example = Example(name, args, expected)
            if example not in found:
                found.append(example)
        for m in _RAISES.finditer(text):  # `mean([]) raises ValueError`: the call must raise that exception
            name, args = m.group(1), m.group(2).strip()
            if not _literal_args(args) or _NOT_WANTED.search(text[max(0, m.start() - 30):m.start()]) \
                    or _NOT_WANTED_AFTER.match(text[m.end():]):
                continue
            example = Example(name, args, _RAISING + m.group(3))
            if example not in found:
                found.append(example)
    return found[:_MAX]


def _literal_args(args: str) -> bool:
    try:
        ast.literal_eval(f"({args},)" if args else "()")
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def examples_of(ctx: CommandContext) -> list[Example]:
    """The examples of the command's inputs, when commands may run (a test command is set); else []."""
    return examples_in(list(strings_in(ctx.cmd.inputs))) if ctx.settings.test_command else []


def _modules(ctx: CommandContext, names: set[str]) -> dict[str, tuple[str, int]]:
    """name -> (the workspace file defining it at top level, the line of its def): the one file, or
    the one of several that the command's inputs name."""
    where: dict[str, list[tuple[str, int]]] = {}
    for rel in project_files(ctx.workspace, 2000):
        if not rel.endswith(".py") or is_test_path(rel):
            continue
        source = read_project_text(ctx, rel)
        if not source or not any(f"def {n}(" in source for n in names):
            continue  # run after every repair: parse only the files that can hold the functions
        tree = parse_python(source or "")
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in names:
                where.setdefault(node.name, []).append((rel, node.lineno))
    # Several modules define it (a model may write a function into a second module as well as the
    # one the goal asked for): the one the inputs name decides.
    named = " ".join(strings_in(ctx.cmd.inputs))
    out: dict[str, tuple[str, int]] = {}
    for n, mods in where.items():
        picked = mods if len(mods) == 1 else [m for m in mods if re.search(rf"(?<![\w/.]){re.escape(m[0])}\b", named)]
        if len(picked) == 1:
            out[n] = picked[0]
    return out


_PROBE = files("agent.roles").joinpath("goal_probe.py")  # its text is sent with -c: nothing to find in the sandbox



def run_examples(ctx: CommandContext, examples: list[Example]) -> list[dict[str, Any]]:
    """[{call, expected, got, held, path?, line?}] for the examples, run in the sandbox on the workspace as
    it is (path and line: the function's def, when one module defines it)."""
    if not examples:
        return []
    modules = _modules(ctx, {e.name for e in examples})
    results: list[dict[str, Any]] = []
    runnable = []
    for e in examples:
        if e.name in modules:
            runnable.append(e)
        else:
            results.append({"call": e.call, "expected": e.expected, "held": False,
                            "got": f"no module of the project defines {e.name} at top level (or several do, "
                                   "none of them named in the goal)"})
    if runnable:
        spec = orjson.dumps([[modules[e.name][0][:-3].replace("/", "."), e.name, e.args, e.expected]
                             for e in runnable]).decode()
        command = f"{shlex.quote(sys.executable)} -c {shlex.quote(_PROBE.read_text())} {shlex.quote(spec)}"
        ran = run_tests(command, str(ctx.workspace.root), min(30.0, max(1.0, ctx.seconds_left())))
        tail = str(ran.get("output_tail") or "")
        line = next((ln for ln in reversed(tail.splitlines()) if ln.startswith("GOAL-EXAMPLES ")), None)
        try:
            outcome = orjson.loads(line.removeprefix("GOAL-EXAMPLES ")) if line else None
        except orjson.JSONDecodeError:
            outcome = None
        if not isinstance(outcome, list) or len(outcome) != len(runnable) or not all(
                isinstance(o, list) and len(o) == 3 and isinstance(o[0], str) and isinstance(o[1], bool)
                and (o[2] is None or isinstance(o[2], str))
                for o in outcome):  # the code under test printed something else on that line
            outcome = [[f"the examples could not be run: {tail[-200:]}", False, "NotRun"]] * len(runnable)
        for e, (got, held, raised) in zip(runnable, outcome, strict=True):
            results.append({"call": e.call, "expected": e.expected, "got": got, "held": held,
                            "path": modules[e.name][0], "line": modules[e.name][1],
                            **({"raised": raised} if raised else {})})
    order = {e.call: i for i, e in enumerate(examples)}
    return sorted(results, key=lambda r: order[r["call"]])


def run_goal_examples(ctx: CommandContext) -> list[dict[str, Any]]:
    """The goal's examples run on the code as it is; [] without them, without a sandbox (a `warn` log)
    or with the strategy `goal_examples` off."""
    examples = examples_of(ctx)
    if not examples or not enabled(ctx, "goal_examples"):
        return []
    try:
        checked = run_examples(ctx, examples)
        applied(ctx, "goal_examples", count=len(checked))
        return checked
    except ShuttingDown:
        raise
    except AgentError as exc:  # no sandbox for commands here: go on without them
        ctx.log("warn", f"{ctx.role}: the goal's examples were not run", code=exc.code)
        return []


def examples_section(checked: list[dict[str, Any]]) -> str:
    """The prompt section of the goal's examples as the agent ran them on the code now."""
    return "## The goal's own examples, run on the code now by the agent\n" + "\n".join(
        f"- {r['call']}: {'holds' if r['held'] else 'returned ' + r['got'] + '; the goal says ' + said(r['expected'])}"
        for r in checked)
