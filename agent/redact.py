"""The one redaction rule, applied to everything the agent writes (stdout, stderr, audit, receipts,
plan records, spill files, recordings).

A secret is the value of an environment variable named `*_TOKEN`, `*_KEY` or `*_SECRET` (any
case), the configured API key, or a value found under such a key in a command's inputs (the
runtime harvests them per command, before anything about the command is written). Values shorter
than 8 characters are not secrets: they would scrub ordinary words from every message. Secret
values are replaced by `[REDACTED]` wherever they appear as text, and values under secret keys are
masked in structured data whatever their length. `idempotency_key` is a protocol field, never a
secret, or replay could never match.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from agent.errors import InvalidCommand

__all__ = ["Redactor", "MASK", "MIN_SECRET_LEN", "MAX_COMMAND_SECRETS", "is_secret_key", "secrets_under_keys"]

MASK = "[REDACTED]"
MIN_SECRET_LEN = 8
_SUFFIXES = ("_token", "_key", "_secret")
_PROTOCOL_KEYS = frozenset({"idempotency_key"})
# A hostile command could name thousands of secret keys, and scrubbing costs one substring search
# per value per string written: a command with more values is refused (it could not be protected
# cheaply), and values harvested from inputs are kept for the most recent commands only (the oldest
# are forgotten first; env values and the API key are never forgotten).
MAX_COMMAND_SECRETS = 1024
MAX_HARVESTED = 4096


def is_secret_key(key: str) -> bool:
    low = key.lower()
    return low not in _PROTOCOL_KEYS and low.endswith(_SUFFIXES)


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def secrets_under_keys(data: Any) -> list[str]:
    """Every scalar (as text) found under a secret-named key anywhere in `data`, iteratively."""
    found: list[str] = []
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, secret = stack.pop()
        if isinstance(node, Mapping):
            for k, v in node.items():
                under = secret or (isinstance(k, str) and is_secret_key(k))
                if under or isinstance(v, Mapping | list | tuple):
                    stack.append((v, under))
        elif isinstance(node, list | tuple):
            # Outside a secret key only containers can hold one: skip scalars (big lists are cheap).
            stack.extend((v, secret) for v in node if secret or isinstance(v, Mapping | list | tuple))
        elif secret:
            text = _scalar_text(node)
            if text is not None:
                found.append(text)
    return found


class Redactor:
    """Replaces secret values in nested data and in free text. Thread-safe."""

    def __init__(self, environ: Mapping[str, str] | None = None, extra: list[str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self._lock = threading.Lock()
        self._pinned: set[str] = set()
        self._harvested: dict[str, None] = {}  # insertion-ordered: oldest first
        self._values: tuple[str, ...] = ()
        for v in [v for k, v in env.items() if is_secret_key(k)] + list(extra or []):
            self.add(v)

    def values(self) -> tuple[str, ...]:
        """The secret values known now, longest first (for checks such as the artifact write guard)."""
        return self._values

    def add(self, value: str) -> None:
        """A secret for the life of the process (env values, the configured API key)."""
        if len(value) < MIN_SECRET_LEN:
            return
        with self._lock:
            if value not in self._pinned:
                self._pinned.add(value)
                self._rebuild()

    def harvest(self, data: Any) -> int:
        """Add the values under secret-named keys in `data` (a command); returns how many it found.

        Raises `InvalidCommand` past `MAX_COMMAND_SECRETS` values, before adding any.
        """
        found = {v for v in secrets_under_keys(data) if len(v) >= MIN_SECRET_LEN}
        if len(found) > MAX_COMMAND_SECRETS:
            raise InvalidCommand(f"the command carries {len(found)} secret values (under *_token/*_key/*_secret "
                                 f"keys); at most {MAX_COMMAND_SECRETS} can be kept out of every output",
                                 limit=MAX_COMMAND_SECRETS)
        if not found:
            return 0
        with self._lock:
            for v in found:
                self._harvested.pop(v, None)
                self._harvested[v] = None  # most recent last
            while len(self._harvested) > MAX_HARVESTED:
                del self._harvested[next(iter(self._harvested))]
            self._rebuild()
        return len(found)

    def copy(self) -> Redactor:
        """An independent redactor knowing the same values now (for one-off additions)."""
        twin = Redactor(environ={})
        with self._lock:
            twin._pinned = set(self._pinned)
            twin._harvested = dict(self._harvested)
            twin._values = self._values
        return twin

    def _rebuild(self) -> None:
        # Longest first so a secret containing another is masked whole; readers see one tuple.
        self._values = tuple(sorted(self._pinned | self._harvested.keys(), key=len, reverse=True))

    def text(self, s: str) -> str:
        for v in self._values:
            if v in s:
                s = s.replace(v, MASK)
        return s

    def data(self, obj: Any, _under_secret: bool = False) -> Any:
        """A redacted copy of JSON-like data (dicts, lists, strings; other scalars unchanged).

        Every scalar under a secret-named key is masked, however deep and however short.
        """
        if isinstance(obj, Mapping):
            out: dict[Any, Any] = {}
            for k, v in obj.items():
                out[k] = self.data(v, _under_secret or (isinstance(k, str) and is_secret_key(k)))
            return out
        if isinstance(obj, (list, tuple)):
            return [self.data(v, _under_secret) for v in obj]
        if _under_secret and obj is not None:
            return MASK
        if isinstance(obj, str):
            return self.text(obj) if self._values else obj
        return obj
