"""Recorded responses: a JSONL file of request digest → reply, served without any network.

Each line: {"digest", "request": {"messages": [...]}, "reply": {"text", "model", "finish_reason"?},
"usage"?, "latency_ms"?, "capabilities"?}. A live request is looked up by the digest of its redacted
messages (what `RecordingModel` stores), then by its plain digest (recordings made before redaction
keyed them). A miss fails loudly and names the nearest recorded request and where it differs.

Capabilities: answer forms depend on them, so a replay must claim what the recorded server could do,
or the agent would pick another form and ask other questions. The first line that carries a
`capabilities` object ({"streaming", "json_schema", "grammar", "server"}) sets them; a recording
without one claims JSON-schema output only (server "recorded").
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import orjson

from agent.errors import ReplayMiss
from agent.models.base import Capabilities, ModelReply, ModelRequest, Usage
from agent.models.recorder import recording_digest, redacted_messages
from agent.redact import Redactor

__all__ = ["RecordedModel", "load_recordings", "RECORDED_CAPABILITIES"]

RECORDED_CAPABILITIES = Capabilities(streaming=False, json_schema=True, grammar=False, server="recorded")


def load_recordings(path: str | Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    p = Path(path)
    if not p.exists():
        return entries
    for n, line in enumerate(p.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON: {exc}") from exc
        if not isinstance(entry, dict) or "digest" not in entry or "reply" not in entry:
            raise ValueError(f"{path}:{n}: a recording needs 'digest' and 'reply'")
        entries.append(entry)
    return entries


def _text_of(entry: dict[str, Any]) -> str:
    msgs = entry.get("request", {}).get("messages", [])
    return "\n\n".join(f"[{m.get('role')}]\n{m.get('content', '')}" for m in msgs)


class RecordedModel:
    """Serves replies from recordings; never touches the network."""

    def __init__(self, path: str | Path, redactor: Redactor | None = None) -> None:
        self.path = str(path)
        self.redactor = redactor if redactor is not None else Redactor()
        self.entries = load_recordings(path)
        self._by_digest: dict[str, dict[str, Any]] = {}
        for e in self.entries:
            self._by_digest.setdefault(e["digest"], e)
        self._capabilities = next((c for c in map(_capabilities_of, self.entries) if c is not None),
                                  RECORDED_CAPABILITIES)

    def capabilities(self, request: ModelRequest | None = None) -> Capabilities:
        return self._capabilities

    def complete(self, request: ModelRequest) -> ModelReply:
        digest = recording_digest(request, self.redactor)
        entry = self._by_digest.get(digest) or self._by_digest.get(request.digest())
        if entry is None:
            raise self._miss(request, digest)
        reply = entry["reply"]
        usage = entry.get("usage") or {}
        finish = reply.get("finish_reason")
        return ModelReply(
            text=reply["text"], model=reply.get("model", "recorded"), provider="recorded",
            usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), 0.0),
            finish_reason=finish if isinstance(finish, str) else "stop",
        )

    def _miss(self, request: ModelRequest, digest: str) -> ReplayMiss:
        if not self.entries:
            return ReplayMiss(f"no recorded response for request {digest}: {self.path} has no recordings",
                              digest=digest, recordings=self.path)
        wanted = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in redacted_messages(request, self.redactor))
        best, best_ratio = self.entries[0], -1.0
        for e in self.entries:
            m = difflib.SequenceMatcher(None, wanted, _text_of(e), autojunk=False)
            ratio = m.quick_ratio()
            if ratio > best_ratio:
                best, best_ratio = e, ratio
        diff = next(iter(_first_difference(_text_of(best), wanted)), "")
        return ReplayMiss(
            f"no recorded response for request {digest} in {self.path}; nearest is {best['digest']} "
            f"({best_ratio:.0%} similar), first difference: {diff}",
            digest=digest, nearest=best["digest"], similarity=round(best_ratio, 3), recordings=self.path,
        )

    def close(self) -> None:
        return None


def _capabilities_of(entry: dict[str, Any]) -> Capabilities | None:
    caps = entry.get("capabilities")
    if not isinstance(caps, dict):
        return None
    return Capabilities(streaming=bool(caps.get("streaming", False)), json_schema=bool(caps.get("json_schema", True)),
                        grammar=bool(caps.get("grammar", False)), server=str(caps.get("server") or "recorded"),
                        prefill=bool(caps.get("prefill", False)))


def _first_difference(recorded: str, wanted: str) -> list[str]:
    for line in difflib.unified_diff(recorded.splitlines(), wanted.splitlines(), "recorded", "request", n=0, lineterm=""):
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---")):
            return [line[:200]]
    return []
