"""Command line: `luallm-agent stdio | replay | demo | plan | tools | schemas`.

One module per subcommand (`agent/cli/<name>.py`, each with `add_parser`); the agent flags they
share are declared once, in `agent/cli/options.py` (`add_agent_options`).
Invalid settings are one line on stderr and exit code 2, before anything is written to stdout.
"""

from __future__ import annotations

import argparse
import sys

from agent import __version__
from agent.cli import demo, replay, schemas, stdio
from agent.cli.options import SettingsError

__all__ = ["main", "build_parser"]

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="luallm-agent", description=__doc__)
    parser.add_argument("--version", action="version", version=f"luallm-agent {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    stdio.add_parser(sub)
    replay.add_parser(sub)
    demo.add_parser(sub)
    schemas.add_parser(sub)
    try:
        from agent.plans.cli import add_plan_parser
    except ImportError:  # the plan runtime is optional for the stdio spine
        pass
    else:
        add_plan_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SettingsError as exc:
        sys.stderr.write(f"luallm-agent: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
