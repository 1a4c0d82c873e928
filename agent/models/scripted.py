"""A model that answers from a queue of canned replies and records what it was asked.

Used by tests and to make fixtures: run a command script against it with `--record` and the
recording becomes a recorded-responses file keyed by the real request digests.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from agent.errors import ModelError
from agent.models.base import Capabilities, ModelReply, ModelRequest, Usage

__all__ = ["ScriptedModel", "SCRIPTED_CAPABILITIES"]

# What a scripted model claims unless told otherwise: structured JSON yes, grammars no.
SCRIPTED_CAPABILITIES = Capabilities(streaming=False, json_schema=True, grammar=False, server="scripted")


class ScriptedModel:
    """Replies in order; `requests` keeps what it was asked; `capabilities` is whatever the test says.

    `finish_reasons` (optional, in step with `replies`) lets a test script a cut-off answer ("length").
    """

    def __init__(self, replies: list[str], model: str = "scripted", *,
                 capabilities: Capabilities = SCRIPTED_CAPABILITIES,
                 finish_reasons: list[str | None] | None = None) -> None:
        self.replies = list(replies)
        self.model = model
        self.requests: list[ModelRequest] = []
        self.finish_reasons = list(finish_reasons or [])
        self._capabilities = capabilities

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        """A JSON list of reply strings, JSONL of {"text": ...} objects, or {"replies": [...],
        "json_schema": false} for a server that takes no response_format."""
        raw = Path(path).read_bytes()
        try:
            data: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            data = [orjson.loads(line)["text"] for line in raw.splitlines() if line.strip()]
        caps = SCRIPTED_CAPABILITIES
        if isinstance(data, dict):
            caps = replace(caps, json_schema=data.get("json_schema") is not False)
            data = data["replies"]
        return cls([d if isinstance(d, str) else d["text"] for d in data], capabilities=caps)

    def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        if not self.replies:
            raise ModelError("scripted model has no replies left", retriable=False)
        text = self.replies.pop(0)
        finish = self.finish_reasons.pop(0) if self.finish_reasons else "stop"
        return ModelReply(text=text, model=self.model, provider="scripted",
                          usage=Usage(len(request.prompt_text()) // 4, len(text) // 4, 0.0), finish_reason=finish)

    def capabilities(self, request: ModelRequest | None = None) -> Capabilities:
        return self._capabilities

    def close(self) -> None:
        return None
