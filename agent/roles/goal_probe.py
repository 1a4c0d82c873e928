"""Runs the goal's examples in the sandbox (agent/roles/goal_examples.py); its own process, its own stdout.

argv[1]: JSON [[module, function, literal arguments, literal expected], ...]. Prints one line:
GOAL-EXAMPLES [[repr of what came back or the exception, held], ...].
"""
import ast
import importlib
import json
import math
import sys

sys.path.insert(0, ".")
out = []
for module, name, args, expected in json.loads(sys.argv[1]):
    want = ast.literal_eval(expected)
    try:
        got = getattr(importlib.import_module(module), name)(*ast.literal_eval("(" + args + ",)" if args else "()"))
        same = got == want or (isinstance(got, (int, float)) and isinstance(want, (int, float))
                               and not isinstance(got, bool) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9))
        out.append([repr(got)[:200], bool(same)])
    except BaseException as exc:
        out.append([(type(exc).__name__ + ": " + str(exc))[:200], False])
sys.stdout.write("GOAL-EXAMPLES " + json.dumps(out) + "\n")
