"""`luallm-agent repairs`: the named repairs and fallbacks, each of which `--disable-repair` turns off."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from agent.cli.parsing import add_command

__all__ = ["add_parser", "cmd_repairs"]

DESCRIPTION = """\
List the repairs and fallbacks the agent may apply to a model's answer, by name, with where each
lives and what it does. Each one is audited as `repair_applied` when it fires, and each can be
switched off for a run with `--disable-repair NAME` (repeatable), LUALLM_AGENT_DISABLE_REPAIRS
(comma-separated) or the list `disable_repairs` in the --config file, so the benchmark can measure what it is worth."""


def add_parser(sub: Any) -> None:
    p = add_command(sub, "repairs", summary="list the named repairs and fallbacks (--disable-repair NAME)",
                    description=DESCRIPTION, examples=["luallm-agent repairs", "luallm-agent repairs --json"])
    p.add_argument("--json", action="store_true", help="one JSON array of {name, where, does}")
    p.set_defaults(func=cmd_repairs)


def cmd_repairs(args: argparse.Namespace) -> int:
    from agent.answering.strategies import STRATEGIES

    if args.json:
        sys.stdout.write(json.dumps([{"name": s.name, "where": s.where, "does": s.does} for s in STRATEGIES.values()],
                                    indent=2) + "\n")
        return 0
    width = max(len(name) for name in STRATEGIES)
    for s in STRATEGIES.values():
        sys.stdout.write(f"{s.name:{width}}  {s.does}\n")
    return 0
