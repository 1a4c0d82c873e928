"""`luallm-agent replay`: drive agents through a command script, like lorch, with a live transcript."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from agent.cli.options import (
    SettingsError,
    add_agent_options,
    agent_option_argv,
    env,
    settings_from,
    startup_warnings,
)
from agent.cli.parsing import add_command, float_in

__all__ = ["add_parser", "cmd_replay"]

DESCRIPTION = """\
Play an NDJSON file of lorch commands the way lorch would: start one `luallm-agent stdio` process
per role on first use, send each command to its role's agent, and wait for that command's
terminal event (up to its deadline, at most 30 minutes) before the next. Each event is printed as
it arrives; on a terminal a status line shows the current command, its elapsed time and the
agent's last heartbeat or progress. Every agent option below is passed through to the agents.
The script is checked before anything starts. Exit code 0 when every command ended with a
successful terminal event, 1 otherwise (the failed commands are listed), 2 for a bad invocation."""

EXAMPLES = [
    "luallm-agent replay commands.ndjson --workspace ws --replay responses.jsonl",
    "luallm-agent replay commands.ndjson --workspace ws --base-url http://127.0.0.1:8080/v1 --model my-model "
    "--record responses.jsonl",
]


def add_parser(sub: Any) -> None:
    replay = add_command(sub, "replay", summary="drive agents through a command script, like lorch, and print "
                                                "the transcript live", description=DESCRIPTION, examples=EXAMPLES)
    replay.add_argument("commands", help="NDJSON file of lorch commands, one per line")
    replay.add_argument("--scripted-dir", help=argparse.SUPPRESS)
    replay.add_argument("--json", action="store_true",
                        help="print every message from the agents as one JSON line instead of a transcript")
    replay.add_argument("--status-every", type=float_in(0, 3600), default=15.0, metavar="SECONDS",
                        help="when stdout is not a terminal, print a status line (command, elapsed time, last "
                             "heartbeat and progress) after this many seconds without output")
    add_agent_options(replay)
    replay.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from agent.cli.transcript import run_and_report
    from agent.conductor import ScriptError, agent_command, load_script

    try:
        script = load_script(Path(args.commands))
    except ScriptError as exc:
        raise SettingsError(str(exc)) from None
    settings_from(args, "builder")  # every agent option and file checked once, before any agent starts
    workspace = str(Path(args.workspace or env("LUALLM_AGENT_WORKSPACE") or os.getcwd()).resolve())
    for warning in startup_warnings(args):
        sys.stderr.write(f"luallm-agent: warning: {warning}\n")
    options = agent_option_argv(args)

    def argv(role: str) -> list[str]:
        return agent_command(role, workspace, options, heartbeat_interval=args.heartbeat_interval or 5.0,
                             scripted_dir=args.scripted_dir)

    return run_and_report(script, argv, workspace, json_mode=args.json, status_every=args.status_every)
