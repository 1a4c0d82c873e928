"""`luallm-agent stdio`: serve NDJSON commands on stdin (what lorch spawns)."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from typing import Any

from agent.cli.options import SettingsError, add_agent_options, env, settings_from
from agent.protocol import ROLES

__all__ = ["add_parser", "cmd_stdio"]


def add_parser(sub: Any) -> None:
    stdio = sub.add_parser("stdio", help="serve NDJSON commands on stdin (what lorch spawns)")
    stdio.add_argument("--role", help=f"one of {', '.join(ROLES)} (env AGENT_TYPE)")
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


def cmd_stdio(args: argparse.Namespace) -> int:
    role = args.role or env("AGENT_TYPE")
    if role not in ROLES:
        raise SettingsError(f"unknown or missing role {role!r}: use --role or AGENT_TYPE with one of {', '.join(ROLES)}")
    config = settings_from(args, role)
    config.drain = args.drain or _stdin_is_regular_file()
    # stdout belongs to the protocol writer alone: keep a private handle to it and point fd 1
    # (and sys.stdout) at stderr, so a stray print or a C library cannot corrupt the stream.
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from agent.runtime import Agent

    return Agent(config, sys.stdin.buffer, protocol_out).serve()
