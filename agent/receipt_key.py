"""The key that authenticates receipts, kept outside the workspace where no command can read it.

A receipt is what the agent replays for a repeated command, so a receipt written by anything but
the agent would decide what lorch is told without running anything. Each receipt carries an
HMAC-SHA256 under a key of this workspace, stored beneath the user's state directory
(`$LUALLM_AGENT_STATE_DIR`, else `$XDG_STATE_HOME/luallm-agent`, else `~/.local/state/luallm-agent`),
which the OS boundary hides from commands and plans. Where that directory cannot be written, the
key lives for this process only: receipts then replay within one run of the agent, never across.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

import orjson

__all__ = ["ReceiptKey", "load_key"]

_KEY_BYTES = 32


class ReceiptKey:
    """Signs and checks receipt data (a dict without its `mac`)."""

    def __init__(self, key: bytes, where: str | None) -> None:
        self._key = key
        self.where = where  # the key file, or None when it lives for this process only

    def mac(self, data: dict[str, object]) -> str:
        canon = orjson.dumps({k: v for k, v in data.items() if k != "mac"}, option=orjson.OPT_SORT_KEYS)
        return "hmac-sha256:" + hmac.new(self._key, canon, hashlib.sha256).hexdigest()

    def verify(self, data: dict[str, object]) -> bool:
        mac = data.get("mac")
        return isinstance(mac, str) and hmac.compare_digest(mac, self.mac(data))


def _state_dir() -> Path:
    if os.environ.get("LUALLM_AGENT_STATE_DIR"):
        return Path(os.environ["LUALLM_AGENT_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "luallm-agent"


def load_key(workspace_root: Path) -> ReceiptKey:
    """This workspace's key: read, or made once (0600, created exclusively so two agents agree)."""
    name = hashlib.sha256(os.path.realpath(workspace_root).encode()).hexdigest()[:32] + ".key"
    path = _state_dir() / "receipt-keys" / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            key = path.read_bytes()
            if len(key) == _KEY_BYTES:
                return ReceiptKey(key, str(path))
            raise OSError(f"{path} is not a key of {_KEY_BYTES} bytes") from None
        key = secrets.token_bytes(_KEY_BYTES)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        return ReceiptKey(key, str(path))
    except OSError:
        return ReceiptKey(secrets.token_bytes(_KEY_BYTES), None)
