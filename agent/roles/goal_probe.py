"""Runs the goal's examples in the sandbox (agent/roles/goal_examples.py); its own process, its own stdout.

argv[1]: JSON [[module, function, literal arguments, literal expected], ...]; argv[2], optional:
JSON {module: source} run in place of those modules' files (a candidate judged before it is
written). Prints one line: GOAL-EXAMPLES [[repr of what came back or the exception, held, the
exception's class name or null], ...].
"""
import ast
import importlib
import importlib.util
import json
import math
import sys

sys.path.insert(0, ".")


def _load(module: str, source: str) -> None:
    """`module` made from `source` instead of its file; its package is imported as usual."""
    parent, _, leaf = module.rpartition(".")
    path = module.replace(".", "/") + ".py"
    spec = importlib.util.spec_from_loader(module, loader=None, origin=path)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = path
    sys.modules[module] = mod
    exec(compile(source, path, "exec"), mod.__dict__)
    if parent:
        setattr(importlib.import_module(parent), leaf, mod)


loaded: dict[str, str] = {}
for module, source in (json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}).items():
    try:
        _load(module, source)
    except BaseException as exc:
        sys.modules.pop(module, None)
        loaded[module] = (type(exc).__name__ + ": " + str(exc))[:200]
out = []
for module, name, args, expected in json.loads(sys.argv[1]):
    raising = expected[len("raises "):] if expected.startswith("raises ") else None
    try:
        if module in loaded:
            raise ImportError(loaded[module])
        function = getattr(importlib.import_module(module), name)
    except BaseException as exc:
        out.append([(type(exc).__name__ + ": " + str(exc))[:200], False, type(exc).__name__])
        continue
    try:
        got = function(*ast.literal_eval("(" + args + ",)" if args else "()"))
    except BaseException as exc:  # the wanted exception, a subclass of it, or a wrong one
        held = raising is not None and any(c.__name__ == raising for c in type(exc).__mro__)
        out.append([(type(exc).__name__ + ": " + str(exc))[:200], held, type(exc).__name__])
        continue
    if raising is not None:
        out.append([repr(got)[:200], False, None])
        continue
    want = ast.literal_eval(expected)
    same = got == want or (isinstance(got, (int, float)) and isinstance(want, (int, float))
                           and not isinstance(got, bool) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9))
    out.append([repr(got)[:200], bool(same), None])
sys.stdout.write("GOAL-EXAMPLES " + json.dumps(out) + "\n")
