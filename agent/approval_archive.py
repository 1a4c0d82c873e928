"""Answered approval requests leave `state/pending_approvals/` for `state/approvals/`, answer included.

`pending_approvals/` then holds only what still waits for a person (what `doctor` counts), and the
answered request is kept rather than deleted, so the home's books show what was answered, how and
when. Used by the supervised approvals and by the skill lifecycle, which share the directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.atomic_json import write_json_atomic

__all__ = ["resolved_dir", "archive", "locate"]


def resolved_dir(pending_path: Path) -> Path:
    """`state/approvals/` beside the `state/pending_approvals/` that holds `pending_path`."""
    return pending_path.parent.parent / "approvals"


def archive(pending_path: Path, data: dict[str, Any]) -> Path:
    """Write `data` (the request with its answer) to `state/approvals/`, then drop the pending file."""
    target_dir = resolved_dir(pending_path)
    target_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = target_dir / pending_path.name
    write_json_atomic(target, data)
    # Written before the pending file goes: a crash in between leaves a duplicate, never a loss.
    pending_path.unlink(missing_ok=True)
    return target


def locate(pending_path: Path) -> Path | None:
    """Where the request named by `pending_path` is now: still pending, answered, or nowhere."""
    if pending_path.exists():
        return pending_path
    answered = resolved_dir(pending_path) / pending_path.name
    return answered if answered.exists() else None
