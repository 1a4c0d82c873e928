"""`luallm-agent schemas`: where the wire-contract JSON Schemas are, or a copy of them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agent.cli.options import SettingsError
from agent.cli.parsing import add_command

__all__ = ["add_parser", "cmd_schemas"]

DESCRIPTION = """\
Print the directory holding the JSON Schemas of the wire contract, as installed with the package:
command, event, heartbeat, log and receipt (`*.schema.json`), and each role's answer
(`answers/<role>.json`). Use them to validate what you send to the agent or what it answers, or
copy them out with --dump DIR (created if missing; the files written are listed)."""


def add_parser(sub: Any) -> None:
    schemas = add_command(sub, "schemas", summary="print the path of the wire-contract JSON Schemas (or --dump them)",
                          description=DESCRIPTION,
                          examples=["luallm-agent schemas", "luallm-agent schemas --dump ./schemas-copy"])
    schemas.add_argument("--dump", metavar="DIR",
                         help="copy every schema into DIR (created if missing) and list the files written")
    schemas.set_defaults(func=cmd_schemas)


def cmd_schemas(args: argparse.Namespace) -> int:
    from agent.resources import dump_schemas, schema_dir

    if not args.dump:
        sys.stdout.write(f"{schema_dir()}\n")
        return 0
    target = Path(args.dump)
    if target.exists() and not target.is_dir():
        raise SettingsError(f"--dump: not a directory: {target}")
    try:
        written = dump_schemas(target)
    except OSError as exc:
        raise SettingsError(f"--dump: cannot write to {target}: {exc.strerror or exc}") from None
    for path in written:
        sys.stdout.write(f"{path}\n")
    return 0
