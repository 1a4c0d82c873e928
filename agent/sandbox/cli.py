"""`luallm-agent sandbox [--json]`: which OS boundary commands and plans get on this machine.

Exit code 0 when commands can run (inside a boundary, or unsandboxed by the user's choice),
1 when they would be refused.
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["add_sandbox_parser", "cmd_sandbox"]


def add_sandbox_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("sandbox", help="report the OS sandbox in force for commands and plans (--json)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--unsandboxed-commands", action="store_true",
                   help="report as an agent started with --unsandboxed-commands would run")
    p.set_defaults(func=cmd_sandbox)


def cmd_sandbox(args: argparse.Namespace) -> int:
    from agent.sandbox.detect import capabilities, configure, current

    if args.unsandboxed_commands:
        configure(unsandboxed_commands=True)
    capabilities(with_bwrap=True)  # the report shows every fallback, not only the one in use
    boundary = current()
    if args.json:
        sys.stdout.write(json.dumps(boundary.to_dict(), sort_keys=True) + "\n")
    else:
        caps = boundary.caps
        lines = [boundary.describe(),
                 f"  landlock: {'ABI ' + str(caps.landlock_abi) if caps.landlock_abi else 'no'}",
                 f"  user namespaces: {'yes' if caps.userns else 'no'}",
                 f"  seccomp: {'yes' if caps.seccomp else 'no'}",
                 f"  bubblewrap: {caps.bwrap or 'no'}"]
        lines += [f"  {k}: {v}" for k, v in sorted(caps.errors.items())]
        sys.stdout.write("\n".join(lines) + "\n")
    return 0 if boundary.commands_allowed else 1
