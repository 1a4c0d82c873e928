"""Streamed chat completions: server-sent events in, one answer (text, finish reason, usage) out.

`SSEDecoder` turns body bytes into the `data` of complete events (text/event-stream: `field: value`
lines, an event ends at a blank line, `:` starts a comment). `ChatStream` folds the events of an
OpenAI-style stream — `chat.completion.chunk` objects whose `choices[0].delta.content` carry the
text, then a chunk with `finish_reason`, optionally a chunk with `usage` (when
`stream_options.include_usage` is honoured), and `data: [DONE]`.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["SSEDecoder", "ChatStream", "StreamError"]


class StreamError(Exception):
    """The stream carried something that is not a chat completion chunk, or an error object."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class SSEDecoder:
    """Incremental text/event-stream parser; yields `(event_name, data)` of each complete event."""

    def __init__(self) -> None:
        self._partial: list[bytes] = []  # the current line so far, in pieces (no rescanning)
        self._data: list[str] = []
        self._event = ""

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        events: list[tuple[str, str]] = []
        start = 0
        while (cut := chunk.find(b"\n", start)) >= 0:
            line = b"".join([*self._partial, chunk[start:cut]])
            self._partial = []
            self._line(line.rstrip(b"\r").decode("utf-8", errors="replace"), events)
            start = cut + 1
        if start < len(chunk):
            self._partial.append(chunk[start:])
        return events

    def close(self) -> list[tuple[str, str]]:
        """End of body: a last line without newline and an event without blank line still count."""
        events: list[tuple[str, str]] = []
        if self._partial:
            line = b"".join(self._partial)
            self._partial = []
            self._line(line.rstrip(b"\r").decode("utf-8", errors="replace"), events)
        self._line("", events)
        return events

    def _line(self, line: str, events: list[tuple[str, str]]) -> None:
        if not line:
            if self._data:
                events.append((self._event, "\n".join(self._data)))
            self._data, self._event = [], ""
            return
        if line.startswith(":"):
            return  # comment / keep-alive
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value


class ChatStream:
    """Accumulates one streamed chat completion."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self.chars = 0
        self.content_chunks = 0  # chunks that carried text: ~ generated tokens when usage is missing
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.model: str | None = None
        self.done = False

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def end_at(self, chars: int) -> None:
        """Keep the first `chars` characters of the reply (a stop string was reached)."""
        self._parts = [self.text[:chars]]
        self.chars = chars

    def event(self, name: str, data: str) -> str:
        """Fold one event in; returns the reply text it added ("" for none)."""
        added = ""
        if data.strip() == "[DONE]":
            self.done = True
            return added
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise StreamError(f"a streamed event is not JSON: {data[:200]!r}", "bad_envelope") from None
        if not isinstance(chunk, dict):
            raise StreamError(f"a streamed event is not a JSON object: {data[:200]!r}", "bad_envelope")
        if name == "error" or chunk.get("error") is not None:
            raise StreamError(f"the server reported an error mid-stream: {_error_text(chunk)}", "stream_error")
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return added
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("content"), str) and delta["content"]:
                self._parts.append(delta["content"])
                self.chars += len(delta["content"])
                self.content_chunks += 1
                added += delta["content"]
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = choice["finish_reason"]
        return added


def _error_text(chunk: dict[str, Any]) -> str:
    err = chunk.get("error")
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return str(err["message"])[:300]
    return str(err if err is not None else chunk)[:300]
