"""`luallm-agent demo`: run the embedded demo on recorded model responses (offline)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "cmd_demo"]


def add_parser(sub: Any) -> None:
    demo = sub.add_parser("demo", help="run the embedded demo on recorded model responses (offline)")
    demo.add_argument("--workspace", help="where to put the demo workspace (default: a new temp directory)")
    demo.add_argument("--json", action="store_true", help="print every message as JSON")
    demo.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from agent.conductor import run_demo

    return run_demo(args)
