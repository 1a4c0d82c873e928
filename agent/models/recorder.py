"""Recording every exchange so a run can be replayed later without a model (`--record FILE`).

Each successful call appends one JSONL line in the format `RecordedModel` serves::

    {"digest", "request": {"messages", "task_type", "role", "schema_name", "temperature"},
     "reply": {"text", "model", "provider", "finish_reason"}, "usage": {"prompt_tokens", "completion_tokens"},
     "latency_ms", "recorded_at"}

Recordings get committed as fixtures, so the stored request (prompt text included) and reply are
redacted first, and the digest is of the *redacted* messages (`recording_digest`): `RecordedModel`
redacts a live request the same way before looking it up, so a redacted recording replays, the
same recording serves a run with other secret values, and no digest of a secret-bearing prompt
is ever stored (it would let anyone holding the file test guesses). Each line is written
with a single `os.write` on an `O_APPEND` descriptor, so concurrent writers never interleave lines
(POSIX appends of this size are atomic enough in practice). Failed calls are not recorded.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson

from agent.clock import utc_now
from agent.models.base import ModelClient, ModelReply, ModelRequest, request_digest
from agent.redact import Redactor

__all__ = ["RecordingModel", "recording_digest", "redacted_messages"]


def redacted_messages(request: ModelRequest, redactor: Redactor) -> list[dict[str, str]]:
    """The request's messages with every known secret value masked in their text."""
    return [{"role": m["role"], "content": redactor.text(m["content"])} for m in request.messages]


def recording_digest(request: ModelRequest, redactor: Redactor) -> str:
    """What a recording is keyed by: the digest of the redacted messages (model name excluded)."""
    return request_digest(redacted_messages(request, redactor))


class RecordingModel:
    """Wraps a client; appends `(digest, redacted request, reply, usage, latency)` per call to `path`."""

    def __init__(self, inner: ModelClient, path: str | Path, redactor: Redactor) -> None:
        self.inner = inner
        self.path = Path(path)
        self.redactor = redactor
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def complete(self, request: ModelRequest) -> ModelReply:
        started = time.perf_counter()
        reply = self.inner.complete(request)
        latency_ms = reply.usage.latency_ms or (time.perf_counter() - started) * 1000.0
        self._append({
            "digest": recording_digest(request, self.redactor),
            "request": self.redactor.data({"messages": redacted_messages(request, self.redactor),
                                           "task_type": request.task_type, "role": request.role,
                                           "schema_name": request.schema_name,
                                           "temperature": request.temperature}),
            # finish_reason too: a reply the client cut at a stop string or a deadline replays as cut
            "reply": {"text": self.redactor.text(reply.text), "model": reply.model, "provider": reply.provider,
                      "finish_reason": reply.finish_reason},
            "usage": {"prompt_tokens": reply.usage.prompt_tokens,
                      "completion_tokens": reply.usage.completion_tokens},
            "latency_ms": round(latency_ms, 1),
            "recorded_at": utc_now(),
        })
        return reply

    def _append(self, entry: dict[str, object]) -> None:
        line = orjson.dumps(entry) + b"\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def close(self) -> None:
        self.inner.close()
