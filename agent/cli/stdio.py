"""`luallm-agent stdio`: serve NDJSON commands on stdin (what lorch spawns)."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from typing import Any

from agent.cli.options import SettingsError, add_agent_options, env, settings_from, startup_warnings
from agent.cli.parsing import add_command
from agent.protocol import ROLES

__all__ = ["add_parser", "cmd_stdio"]

DESCRIPTION = """\
Serve one lorch role: read commands as NDJSON on stdin, answer with events, heartbeats and a few
logs as NDJSON on stdout, and keep receipts, the audit log and every file written inside the
workspace. This is what lorch starts from the `cmd` array of its lorch.json, with AGENT_TYPE set
to the role. For each command the agent asks the configured model for its answer (the builder:
changed files as text, in rounds against --test-command; the other roles: JSON, or a Lua plan run
in the sandbox) and ends the command with exactly one terminal event, also on failure.
Diagnostics go to stderr and logs/luallm-agent/audit.jsonl. Redirect a file of commands into
stdin to replay it: every command is answered before the agent exits."""

EXAMPLES = [
    "luallm-agent stdio --role reviewer --workspace . --base-url http://127.0.0.1:8080/v1 --model my-model",
    "AGENT_TYPE=builder luallm-agent stdio --workspace ws --replay responses.jsonl < commands.ndjson",
]


def add_parser(sub: Any) -> None:
    stdio = add_command(sub, "stdio", summary="serve NDJSON commands on stdin (what lorch spawns)",
                        description=DESCRIPTION, examples=EXAMPLES)
    stdio.add_argument("--role", choices=ROLES, help="the role to serve (env AGENT_TYPE; required)")
    stdio.add_argument("--drain", action="store_true",
                       help="at end of input, finish every command received before exiting (automatic when "
                            "stdin is a regular file); without it EOF stops promptly, as lorch expects")
    add_agent_options(stdio)
    stdio.set_defaults(func=cmd_stdio)


def _stdin_is_regular_file() -> bool:
    # `luallm-agent stdio < commands.ndjson`: a fixture replay, never lorch (which uses a pipe).
    try:
        return stat.S_ISREG(os.fstat(0).st_mode)
    except OSError:
        return False


def _role(args: argparse.Namespace) -> str:
    role = args.role or env("AGENT_TYPE")
    if role is None:
        raise SettingsError(f"no role given: pass --role ROLE or set the environment variable AGENT_TYPE=ROLE "
                            f"(lorch sets it), where ROLE is one of {', '.join(ROLES)}")
    if role not in ROLES:
        raise SettingsError(f"AGENT_TYPE={role!r} is not a role: use one of {', '.join(ROLES)}")
    return role


def cmd_stdio(args: argparse.Namespace) -> int:
    role = _role(args)
    config = settings_from(args, role)
    from agent.sandbox.confine import make_undumpable

    make_undumpable()  # API keys in our environment stay out of reach of the commands we run
    config.drain = args.drain or _stdin_is_regular_file()
    for warning in startup_warnings(args):
        sys.stderr.write(f"luallm-agent: warning: {warning}\n")
    # stdout belongs to the protocol writer alone: keep a private handle to it and point fd 1
    # (and sys.stdout) at stderr, so a stray print or a C library cannot corrupt the stream.
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from agent.runtime import Agent

    return Agent(config, sys.stdin.buffer, protocol_out).serve()
