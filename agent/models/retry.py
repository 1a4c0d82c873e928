"""Bounded retries for model calls: exponential backoff with full jitter, `Retry-After`, deadlines.

Only transient failures are retried: transport timeouts (`ModelTimeout` whose `timeout_kind` is
connect/write/pool) and HTTP 408, 409, 429 and 5xx (`ModelError` with a `status` detail). A
refused connection is *not* retried here: for a local model it usually means the server died, and
the routing layer wants to hear that at once so it can fall back.

A slow model is another matter. Answers stream, so a timeout no longer means "took long" but "went
silent": nothing within the first-byte window (`first_byte`, or `read` without streaming) or a stall
mid-answer (`stall`). Sending the identical request again mostly meets the same silence, so such a
timeout is retried **once** per call at most, and the error that ends the call keeps its
`partial_chars`. A `deadline` timeout — the stream was still going when time ran out — is never
retried; a smaller request is the answers layer's decision, not ours.

The wait before attempt n+1 is `Retry-After` when the server sent one, else a uniformly random
value in [0, min(cap, base * 2**(n-1))] ("full jitter", which spreads retrying clients apart). No
wait may end past the request deadline: when it would, we stop and re-raise the last error.
Sleep, randomness and the clock are injectable so tests never really sleep.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from agent.audit import AuditLog
from agent.errors import AgentError, DeadlineExceeded, ModelError, ModelTimeout
from agent.models.base import (
    UNKNOWN_CAPABILITIES,
    Capabilities,
    ModelClient,
    ModelReply,
    ModelRequest,
    capabilities_of,
)

__all__ = ["RetryPolicy", "RetryingModel", "is_retriable", "parse_retry_after", "RETRY_STATUSES"]

RETRY_STATUSES = frozenset({408, 409, 429})
_TRANSIENT_TIMEOUTS = frozenset({"connect", "write", "pool"})
_SILENCE_TIMEOUTS = frozenset({"first_byte", "stall", "read"})  # retried once per call at most


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts (including the first) and the backoff envelope, in seconds."""

    attempts: int = 3
    base_s: float = 1.0
    cap_s: float = 30.0

    def backoff(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        """Full-jitter wait after failed attempt `attempt` (1-based)."""
        ceiling = min(self.cap_s, self.base_s * (2 ** (attempt - 1)))
        return float(rand() * ceiling)


def is_retriable(exc: AgentError) -> bool:
    """True for transport and silence timeouts and HTTP 408/409/429/5xx; everything else fails at once."""
    if isinstance(exc, ModelTimeout):
        return exc.details.get("timeout_kind") in _TRANSIENT_TIMEOUTS | _SILENCE_TIMEOUTS
    status = exc.details.get("status")
    return isinstance(status, int) and (status in RETRY_STATUSES or 500 <= status <= 599)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP date; None if unusable."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class RetryingModel:
    """Wraps a single-attempt client with the retry policy; audits every attempt as `model_attempt`."""

    def __init__(self, inner: ModelClient, policy: RetryPolicy | None = None, *, audit: AuditLog | None = None,
                 sleep: Callable[[float], None] = time.sleep, rand: Callable[[], float] = random.random,
                 clock: Callable[[], float] = time.time) -> None:
        self.inner = inner
        self.policy = policy or RetryPolicy()
        self.audit = audit
        self._sleep = sleep
        self._rand = rand
        self._clock = clock

    def complete(self, request: ModelRequest) -> ModelReply:
        attempts = max(1, self.policy.attempts)
        silences = 0
        for attempt in range(1, attempts + 1):
            try:
                reply = self.inner.complete(request)
            except ModelError as exc:
                silent = isinstance(exc, ModelTimeout) and exc.details.get("timeout_kind") in _SILENCE_TIMEOUTS
                silences += silent
                wait, give_up = self._plan_next(exc, attempt, attempts, request)
                if give_up is None and silent and silences > 1:
                    give_up = "silent_twice"
                self._record(attempt, request, outcome="error", error=exc, wait_s=None if give_up else wait,
                             gave_up=give_up)
                if give_up:
                    exc.details.setdefault("attempts", attempt)
                    raise
                self._sleep(wait)
                continue
            except DeadlineExceeded as exc:
                self._record(attempt, request, outcome="error", error=exc, wait_s=None, gave_up="deadline")
                raise
            self._record(attempt, request, outcome="ok")
            reply.attempts = attempt
            return reply
        raise AssertionError("unreachable: the last attempt either returns or raises")

    def _plan_next(self, exc: ModelError, attempt: int, attempts: int,
                   request: ModelRequest) -> tuple[float, str | None]:
        """The wait before the next attempt, and why we give up instead (None = retry)."""
        if not is_retriable(exc):
            return 0.0, "not_retriable"
        if attempt >= attempts:
            return 0.0, "attempts_exhausted"
        retry_after = exc.details.get("retry_after_s")
        if isinstance(retry_after, (int, float)):
            # Honour the server, but a wait beyond our own cap means "come back much later".
            if retry_after > self.policy.cap_s:
                return float(retry_after), "retry_after_too_long"
            wait = float(retry_after)
        else:
            wait = self.policy.backoff(attempt, self._rand)
        if request.deadline is not None and self._clock() + wait >= request.deadline:
            return wait, "deadline"
        return wait, None

    def _record(self, attempt: int, request: ModelRequest, *, outcome: str, error: AgentError | None = None,
                wait_s: float | None = None, gave_up: str | None = None) -> None:
        if self.audit is None:
            return
        fields: dict[str, object] = {"attempt": attempt, "max_attempts": self.policy.attempts,
                                     "outcome": outcome, "digest": request.digest(),
                                     "model": getattr(self.inner, "model", None),
                                     "provider": getattr(self.inner, "provider", None)}
        if error is not None:
            fields.update(error=error.code, message=error.message, status=error.details.get("status"))
        if wait_s is not None:
            fields["next_wait_s"] = round(wait_s, 3)
        if gave_up is not None:
            fields["gave_up"] = gave_up
        self.audit.record("model_attempt", **fields)

    def capabilities(self, request: ModelRequest | None = None) -> Capabilities:
        return capabilities_of(self.inner, request) or UNKNOWN_CAPABILITIES

    def close(self) -> None:
        self.inner.close()
