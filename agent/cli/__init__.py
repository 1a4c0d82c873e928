"""Command line: `luallm-agent stdio | replay | demo | plan | tools | schemas | repairs`.

One module per subcommand (`agent/cli/<name>.py`, each with `add_parser`); the agent flags they
share are declared once, in `agent/cli/options.py` (`add_agent_options`).
Invalid settings are one line on stderr and exit code 2, before anything is written to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys

from agent import __version__
from agent.cli import demo, repairs, replay, schemas, stdio
from agent.cli.options import SettingsError
from agent.cli.parsing import EXIT_USAGE, HelpFormatter, Parser

__all__ = ["main", "build_parser"]

DESCRIPTION = """\
luallm-agent is a headless agent for the lorch orchestrator: lorch starts `luallm-agent stdio`
once per role and talks NDJSON with it. The other subcommands are for people: run the offline
demo, replay a command script with a live transcript, run one Lua plan, list the plan tools, or
find the wire-contract schemas. `luallm-agent COMMAND --help` describes each one with examples."""

EPILOG = """\
examples:
  luallm-agent demo
  luallm-agent stdio --role builder --workspace . --base-url http://127.0.0.1:8080/v1 --model my-model"""


def build_parser(only_stdio: bool = False) -> argparse.ArgumentParser:
    """The whole command line; `only_stdio` registers just `stdio` (lorch's start-up path: the other
    subcommands' modules cost ~20 ms of imports before the `ready` heartbeat)."""
    parser = Parser(prog="luallm-agent", description=DESCRIPTION, epilog=EPILOG, formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"luallm-agent {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    stdio.add_parser(sub)
    if only_stdio:
        return parser
    replay.add_parser(sub)
    demo.add_parser(sub)
    schemas.add_parser(sub)
    repairs.add_parser(sub)
    from agent.skills.cli import add_parser as add_skills_parser

    add_skills_parser(sub)
    from agent.supervised.cli import add_parsers as add_supervised_parsers

    add_supervised_parsers(sub)  # init, doctor, run, stop, log
    from agent.sandbox.cli import add_sandbox_parser

    add_sandbox_parser(sub)
    try:
        from agent.plans.cli import add_plan_parser
    except ImportError:  # the plan runtime is optional for the stdio spine
        pass
    else:
        add_plan_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] and argv[0].startswith("-") and {"--resume", "--reset"} & set(argv):
        argv = ["run", *argv]  # seed 000 §13 spells them `luallm-agent --resume` / `--reset`
    parser = build_parser(only_stdio=argv[:1] == ["stdio"])
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SettingsError as exc:
        sys.stderr.write(f"luallm-agent {args.command}: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`… | head`): nothing left to say, and nothing to say it to.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        if os.environ.get("LUALLM_AGENT_DEBUG"):
            raise
        sys.stderr.write(f"luallm-agent {args.command}: internal error: {type(exc).__name__}: {exc} "
                         "(set LUALLM_AGENT_DEBUG=1 for the traceback, and please report it)\n")
        return 1
