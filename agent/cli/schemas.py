"""`luallm-agent schemas`: where the wire-contract JSON Schemas are."""

from __future__ import annotations

from typing import Any

from agent.protocol import SCHEMA_DIR

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    schemas = sub.add_parser("schemas", help="print the path of the wire-contract JSON Schemas")
    schemas.set_defaults(func=lambda _a: print(SCHEMA_DIR) or 0)
