"""Helpers shared by the OS-boundary tests (tests/sandbox/) and the end-to-end kill test."""

from __future__ import annotations

import os

from agent.sandbox.policy import BWRAP, LANDLOCK, LANDLOCK_NS

CONFINED_MODES = (LANDLOCK_NS, LANDLOCK, BWRAP)
SECRET = "TOP-SECRET-OUTSIDE-0451"
KEY = "PRIVATE-KEY-MATERIAL-7731"


def pids_with_marker(marker: str) -> list[int]:
    """Processes whose command line or environment carries `marker`."""
    found = []
    needle = marker.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        for what in ("cmdline", "environ"):
            try:
                with open(f"/proc/{name}/{what}", "rb") as fh:
                    if needle in fh.read():
                        found.append(int(name))
                        break
            except OSError:
                continue
    return found
