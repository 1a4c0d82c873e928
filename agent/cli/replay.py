"""`luallm-agent replay`: drive agents through a command script, like lorch, and print the transcript."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from agent.cli.options import SettingsError, add_agent_options

__all__ = ["add_parser", "cmd_replay"]


def add_parser(sub: Any) -> None:
    replay = sub.add_parser("replay", help="drive agents through a command script, like lorch, and print the transcript")
    replay.add_argument("commands", help="NDJSON file of commands")
    replay.add_argument("--scripted-dir", help=argparse.SUPPRESS)
    replay.add_argument("--json", action="store_true", help="print every message as JSON instead of a transcript")
    add_agent_options(replay)
    replay.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from agent.conductor import run_script

    if not Path(args.commands).is_file():
        raise SettingsError(f"commands file not found: {args.commands}")
    ws = args.workspace or os.getcwd()
    if not Path(ws).is_dir():
        raise SettingsError(f"workspace does not exist or is not a directory: {ws}")
    return run_script(args)
