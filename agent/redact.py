"""Secret redaction applied to everything the agent writes (stdout, stderr, audit, receipts).

Values under keys ending in `_TOKEN`, `_KEY` or `_SECRET` (any case, nested) are replaced, and the
values of environment variables with those suffixes are scrubbed wherever they appear as text.
Protocol fields are not secrets: `idempotency_key` is never touched, or replay could never match.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["Redactor", "MASK", "is_secret_key"]

MASK = "[REDACTED]"
_SUFFIXES = ("_token", "_key", "_secret")
_PROTOCOL_KEYS = frozenset({"idempotency_key"})
# Shorter values would scrub ordinary words ("1", "yes") from every message.
_MIN_SECRET_LEN = 6


def is_secret_key(key: str) -> bool:
    low = key.lower()
    return low not in _PROTOCOL_KEYS and low.endswith(_SUFFIXES)


class Redactor:
    """Replaces secret values in nested data and in free text."""

    def __init__(self, environ: Mapping[str, str] | None = None, extra: list[str] | None = None) -> None:
        env = os.environ if environ is None else environ
        values = {v for k, v in env.items() if is_secret_key(k) and len(v) >= _MIN_SECRET_LEN}
        values.update(v for v in (extra or []) if len(v) >= _MIN_SECRET_LEN)
        # Longest first so a secret containing another is masked whole.
        self._values = sorted(values, key=len, reverse=True)

    def add(self, value: str) -> None:
        if len(value) >= _MIN_SECRET_LEN and value not in self._values:
            self._values = sorted([*self._values, value], key=len, reverse=True)

    def values(self) -> list[str]:
        """The secret values known so far (the workspace refuses writes that contain one)."""
        return list(self._values)

    def text(self, s: str) -> str:
        for v in self._values:
            if v in s:
                s = s.replace(v, MASK)
        return s

    def data(self, obj: Any) -> Any:
        """A redacted copy of JSON-like data (dicts, lists, strings; other scalars unchanged)."""
        if isinstance(obj, str):
            return self.text(obj) if self._values else obj
        if isinstance(obj, Mapping):
            out: dict[Any, Any] = {}
            for k, v in obj.items():
                if isinstance(k, str) and is_secret_key(k) and v is not None and not isinstance(v, (dict, list)):
                    out[k] = MASK
                else:
                    out[k] = self.data(v)
            return out
        if isinstance(obj, (list, tuple)):
            return [self.data(v) for v in obj]
        return obj
