"""Writing a JSON file so that a reader sees the old version or the new one, never a part."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import orjson

__all__ = ["write_json_atomic"]


def write_json_atomic(path: Path, obj: Any, *, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2, default=str) + b"\n"
    # A name of its own per write: the heartbeat watcher and the main loop write heartbeat.json
    # from two threads of one process, and a shared temp name let one rename the other's file away.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
