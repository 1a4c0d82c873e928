"""Metering: the `model_call` audit event for every call, and per-command usage totals.

`AuditedModel` records one `model_call` per call (model, provider, digest, usage, latency, outcome).
`UsageTracker` sums what one command spent so the runtime can put
`{"calls", "prompt_tokens", "completion_tokens", "models"}` into its terminal event.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from agent.audit import AuditLog
from agent.errors import AgentError
from agent.models.base import (
    UNKNOWN_CAPABILITIES,
    Capabilities,
    ModelClient,
    ModelReply,
    ModelRequest,
    capabilities_of,
)

__all__ = ["AuditedModel", "UsageTracker"]


class AuditedModel:
    """Wraps a client and audits every call as `model_call`, successful or not."""

    def __init__(self, inner: ModelClient, audit: AuditLog) -> None:
        self.inner = inner
        self.audit = audit

    def complete(self, request: ModelRequest) -> ModelReply:
        started = time.perf_counter()
        base = {"digest": request.digest(), "task_type": request.task_type, "role": request.role,
                "max_tokens": request.resolved_max_tokens()}
        try:
            reply = self.inner.complete(request)
        except AgentError as exc:
            self.audit.record("model_call", **base, outcome="error", error=exc.code, message=exc.message,
                              latency_ms=round((time.perf_counter() - started) * 1000.0, 1))
            raise
        usage = reply.usage.to_dict()
        if not usage["latency_ms"]:
            usage["latency_ms"] = round((time.perf_counter() - started) * 1000.0, 1)
        self.audit.record("model_call", **base, outcome="ok", model=reply.model, provider=reply.provider,
                          attempts=reply.attempts, usage=usage, tokens_in=reply.usage.prompt_tokens,
                          tokens_out=reply.usage.completion_tokens, latency_ms=usage["latency_ms"],
                          finish_reason=reply.finish_reason)
        return reply

    def capabilities(self, request: ModelRequest | None = None) -> Capabilities:
        return capabilities_of(self.inner, request) or UNKNOWN_CAPABILITIES

    def close(self) -> None:
        self.inner.close()


class UsageTracker:
    """Counts calls, tokens and models per command: `complete()` as usual, `summary()`, `reset()`."""

    def __init__(self, client: ModelClient) -> None:
        self.client = client
        self._lock = threading.Lock()  # nested model calls may come from a plan's worker thread
        self.reset()

    def complete(self, request: ModelRequest) -> ModelReply:
        reply = self.client.complete(request)
        with self._lock:
            self._calls += 1
            self._prompt += reply.usage.prompt_tokens
            self._completion += reply.usage.completion_tokens
            if reply.model not in self._models:
                self._models.append(reply.model)
        return reply

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return {"calls": self._calls, "prompt_tokens": self._prompt, "completion_tokens": self._completion,
                    "models": list(self._models)}

    def capabilities(self, request: ModelRequest | None = None) -> Capabilities:
        return capabilities_of(self.client, request) or UNKNOWN_CAPABILITIES

    def reset(self) -> None:
        with self._lock:
            self._calls = 0
            self._prompt = 0
            self._completion = 0
            self._models: list[str] = []

    def close(self) -> None:
        self.client.close()
