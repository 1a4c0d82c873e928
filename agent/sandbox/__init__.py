"""The OS boundary around commands and the plan worker: Landlock, namespaces, bubblewrap, or none.

One interface for both: the agent decides the boundary once (`current()`), starts commands
through `CommandBox` (a launcher confines each one and kills its whole tree when the agent goes),
and the plan worker confines itself with `confine_worker(policy)` once it knows the workspace.

Modules, one job each:
- `landlock`, `namespaces`, `seccomp` — ctypes bindings to the kernel features
- `grants` — which paths may be read (system dirs, the Python install; never secrets)
- `policy` — what one confinement grants, as data the launcher receives
- `confine` — apply a policy to the calling process
- `launch` — the launcher/supervisor process (`python -I -S launch.py`)
- `bwrap` — the bubblewrap command line (fallback without Landlock)
- `lifeline` — children learn at once that the agent is gone
- `detect` — probe the kernel, choose the boundary, describe it in one line
- `spawn` — `CommandBox`: start commands inside the boundary, kill them all
- `plan_worker` — the plan worker's policy
- `cli` — `luallm-agent sandbox [--json]`

Everything the launcher imports is stdlib-only and cheap; this file loads the rest lazily.
"""

import importlib

TYPE_CHECKING = False  # not `from typing import …`: the launcher imports this package and must start fast
if TYPE_CHECKING:
    from agent.sandbox.confine import confine_worker
    from agent.sandbox.detect import Boundary, Capabilities, configure, current
    from agent.sandbox.plan_worker import worker_policy
    from agent.sandbox.policy import MODES, Policy
    from agent.sandbox.spawn import CommandBox, ensure_commands_allowed, refusal

_WHERE: dict[str, tuple[str, str]] = {
    "Boundary": ("detect", "Boundary"), "Capabilities": ("detect", "Capabilities"),
    "configure": ("detect", "configure"), "current": ("detect", "current"),
    "Policy": ("policy", "Policy"), "MODES": ("policy", "MODES"),
    "CommandBox": ("spawn", "CommandBox"), "refusal": ("spawn", "refusal"),
    "ensure_commands_allowed": ("spawn", "ensure_commands_allowed"),
    "confine_worker": ("confine", "confine_worker"), "worker_policy": ("plan_worker", "worker_policy"),
}


def __getattr__(name: str) -> object:
    if name not in _WHERE:
        raise AttributeError(f"module 'agent.sandbox' has no attribute {name!r}")
    module, attr = _WHERE[name]
    value = getattr(importlib.import_module(f"agent.sandbox.{module}"), attr)
    globals()[name] = value
    return value


__all__ = ["Boundary", "Capabilities", "configure", "current", "Policy", "MODES", "CommandBox", "refusal",
           "ensure_commands_allowed", "confine_worker", "worker_policy"]
