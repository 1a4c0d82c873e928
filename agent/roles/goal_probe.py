"""Runs the goal's examples in the sandbox (agent/roles/goal_examples.py); its own process, its own stdout.

argv[1]: JSON [[module, function, literal arguments, literal expected], ...]. Prints one line:
GOAL-EXAMPLES [[repr of what came back or the exception, held, the exception's class name or null], ...].
"""
import ast
import importlib
import json
import math
import sys

sys.path.insert(0, ".")
out = []
for module, name, args, expected in json.loads(sys.argv[1]):
    raising = expected[len("raises "):] if expected.startswith("raises ") else None
    try:
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
