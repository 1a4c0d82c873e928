"""One attempt at an OpenAI-compatible `POST {base_url}/chat/completions` (llama.cpp, luallm, OpenAI…).

Retries live in `agent.models.retry`; this module makes one exchange per call — more only when the
server rejects a feature (`stream`, `response_format`, `grammar`) and we resend without it, which is
remembered for the life of the client (one per endpoint per process).

Answers are streamed (SSE, `"stream": true` with `stream_options.include_usage`), so a generation that
keeps producing tokens is never cut by a fixed read timeout. An exchange is bounded instead by
(`agent.models.watchdog`): the first byte within `timeout_s` (`--model-timeout`: connect, prompt
processing, first token), then no silence longer than `stall_s` (`--model-stall-s`, never cutting
before `timeout_s`), and always the request deadline. With llama.cpp (known from the capability probe) `return_progress` makes prompt
processing stream progress chunks too. A server that cannot stream gets the plain request: its whole
answer must then arrive within `timeout_s`.

The decoded body is capped at `max_response_bytes` while it is read and decompressed
(`agent.models.bounded`). Failures map onto the error tree:

* no time left before `request.deadline`          → `DeadlineExceeded` (nothing is sent)
* connect/write/pool timeout                        → `ModelTimeout` (`timeout_kind`)
* nothing within `timeout_s`                        → `ModelTimeout` (`timeout_kind: first_byte`)
* silence for `stall_s` mid-answer                  → `ModelTimeout` (`timeout_kind: stall`, `partial_chars`)
* deadline passed mid-answer                        → `ModelTimeout` (`timeout_kind: deadline`, `partial_chars`)
* connection refused, DNS failure, reset…           → `ModelError` (`reason: "connect_error"`)
* HTTP 4xx/5xx                                      → `ModelError` (`status`, `retry_after_s`)
* body over the cap                                 → `ModelError` (`reason: "response_too_large"`)
* 2xx whose body is not a chat completion           → `ModelError` (`reason: "bad_envelope"`)
* an error event or a cut stream                    → `ModelError` (`reason: "stream_error"`/`"stream_incomplete"`)

A streamed answer that falls into an exact loop (`agent.models.repetition`: its end is six or more
copies of one block) is not read to its token limit: the connection is closed, which stops the
server's generation, and the reply so far comes back with `finish_reason: "repetition"`.

The API key only ever travels in the Authorization header; it is scrubbed from every message we build
and never passed to the audit log.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import orjson

from agent.audit import AuditLog
from agent.errors import DeadlineExceeded, ModelError, ModelTimeout
from agent.models.base import Capabilities, ModelReply, ModelRequest, Usage
from agent.models.bounded import BoundedDecoder, ResponseTooLarge, UnsupportedEncoding
from agent.models.limits import DEFAULT_FIRST_TOKEN_S, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_STALL_S
from agent.models.repetition import RepetitionWatch
from agent.models.retry import parse_retry_after
from agent.models.sse import ChatStream, SSEDecoder, StreamError
from agent.models.stops import StopStrings, cut_at_stop
from agent.models.watchdog import StreamWatchdog, timeout_kind
from agent.redact import MASK

__all__ = ["OpenAIChatModel"]

_SNIPPET = 300
_ERROR_BODY_CAP = 64 * 1024  # of an HTTP error body we keep only a snippet
_PROBE_TIMEOUT_S = 5.0
_PROBE_BODY_CAP = 1024 * 1024
# A 400/422 whose body names the feature is taken as "this server does not do that".
_SCHEMA_REJECTION = re.compile(r"response_format|json_schema", re.IGNORECASE)
_GRAMMAR_REJECTION = re.compile(r"grammar", re.IGNORECASE)
_STREAM_REJECTION = re.compile(r"stream", re.IGNORECASE)
_NAME_OK = re.compile(r"[^A-Za-z0-9_-]")


@dataclass
class _Features:
    """What this exchange asks of the server; switched off one by one when the server refuses."""

    stream: bool
    schema: bool
    grammar: bool


@dataclass
class _Exchange:
    status: int
    headers: httpx.Headers
    text: str = ""                 # error bodies (a snippet's worth)
    reply: ModelReply | None = None


class _Expired(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class OpenAIChatModel:
    """A `ModelClient` (and `SupportsCapabilities`) for one OpenAI-compatible endpoint and model."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, *,
                 timeout_s: float = DEFAULT_FIRST_TOKEN_S, stall_s: float = DEFAULT_STALL_S,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 transport: httpx.BaseTransport | None = None, supports_json_schema: bool = True,
                 streaming: bool = True, probe: bool = False, audit: AuditLog | None = None,
                 provider: str = "openai", clock: Callable[[], float] = time.time) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.provider = provider
        self.timeout_s = timeout_s
        self.stall_s = stall_s
        self.max_response_bytes = max_response_bytes
        self.supports_json_schema = supports_json_schema
        self.streaming = streaming
        self.supports_grammar: bool | None = None  # None: as probed; False: the server refused it
        self.audit = audit
        self._api_key = api_key or None
        self._clock = clock
        self._probe = probe
        self._caps: Capabilities | None = None
        self._caps_lock = threading.Lock()
        # No redirects: following one could hand the Authorization header to another host.
        self._client = httpx.Client(transport=transport, follow_redirects=False)

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIChatModel(url={self.url!r}, model={self.model!r}, provider={self.provider!r})"

    # -- ModelClient --------------------------------------------------------------------------

    def complete(self, request: ModelRequest) -> ModelReply:
        if self._probe:
            self.capabilities()
        grammar = bool(request.grammar) and self.supports_grammar is not False
        features = _Features(stream=self.streaming, grammar=grammar,
                             schema=bool(request.response_schema) and self.supports_json_schema and not grammar)
        while True:
            result = self._exchange(request, features)
            if result.reply is not None:
                return result.reply
            had_grammar = features.grammar
            if result.status in (400, 422) and self._drop_refused_feature(features, result.text):
                if had_grammar and not features.grammar:  # a JSON answer's grammar refused: its schema instead
                    features.schema = bool(request.response_schema) and self.supports_json_schema
                continue
            raise self._status_error(result.status, result.headers, result.text)

    def close(self) -> None:
        self._client.close()

    # -- capabilities -------------------------------------------------------------------------

    def capabilities(self, request: ModelRequest | None = None) -> Capabilities:
        """The probed capabilities (once per process), less what this server has refused since."""
        from agent.models.probe import probe_capabilities

        with self._caps_lock:
            if self._caps is None:
                self._caps = probe_capabilities(self)
                if self.audit is not None:
                    self.audit.record("model_capabilities", model=self.model, provider=self.provider,
                                      url=self.base_url, **self._caps.to_dict())
            caps = self._caps
        return replace(caps, streaming=caps.streaming and self.streaming,
                       json_schema=caps.json_schema and self.supports_json_schema,
                       grammar=caps.grammar and self.supports_grammar is not False)

    def get_json(self, url: str, timeout_s: float = _PROBE_TIMEOUT_S) -> tuple[int, Any]:
        """GET a small JSON document from this server (for probing); (0, None) when unreachable."""
        try:
            response = self._client.send(self._client.build_request(
                "GET", url, headers=self._headers(stream=False), timeout=httpx.Timeout(timeout_s)), stream=True)
            try:
                raw = b"".join(BoundedReader(response, None, _PROBE_BODY_CAP))
            finally:
                response.close()
        except (httpx.HTTPError, ResponseTooLarge, UnsupportedEncoding, ValueError):
            return 0, None
        try:
            return response.status_code, orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            return response.status_code, None

    # -- request ------------------------------------------------------------------------------

    def _body(self, request: ModelRequest, features: _Features) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": request.messages,
                                "temperature": request.temperature, "stream": features.stream}
        max_tokens = request.resolved_max_tokens()
        if max_tokens > 0:
            body["max_tokens"] = max_tokens
        if features.stream:
            body["stream_options"] = {"include_usage": True}
            if self._caps is not None and self._caps.server == "llama.cpp":
                body["return_progress"] = True  # prompt processing streams progress: no silent minutes
        if features.grammar:
            body["grammar"] = request.grammar
        elif features.schema:
            # strict=false: strict mode demands additionalProperties:false everywhere, which our
            # schemas do not promise; validation happens on our side anyway.
            name = _NAME_OK.sub("_", request.schema_name or "answer")[:64] or "answer"
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": name, "schema": request.response_schema,
                                                       "strict": False}}
        return body

    def _headers(self, *, stream: bool) -> dict[str, str]:
        headers = {"Content-Type": "application/json",
                   "Accept": "text/event-stream, application/json" if stream else "application/json",
                   # Only what BoundedDecoder can decode within the cap.
                   "Accept-Encoding": "gzip, deflate"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _drop_refused_feature(self, features: _Features, text: str) -> bool:
        """After a 400/422: switch off the feature the server refused and say whether to resend."""
        detail = self._scrub(text[:_SNIPPET])
        if features.grammar and _GRAMMAR_REJECTION.search(text):
            if self._caps is not None and self._caps.grammar:
                # This server does grammars: the grammar itself is bad. Say so; never resend it.
                raise ModelError(f"model {self.model!r} at {self.url} rejected the grammar: {detail}",
                                 reason="grammar_rejected", status=400, model=self.model, provider=self.provider)
            features.grammar = False
            self.supports_grammar = False
            self._audit("grammar_unsupported", detail=detail)
            return True
        if features.schema and _SCHEMA_REJECTION.search(text):
            features.schema = False
            self.supports_json_schema = False
            self._audit("response_format_unsupported", detail=detail)
            return True
        if features.stream and _STREAM_REJECTION.search(text):
            features.stream = False
            self.streaming = False
            self._audit("streaming_unsupported", detail=detail)
            return True
        return False

    def _time_budget(self, request: ModelRequest) -> float | None:
        """Seconds left before the deadline (None: no deadline); DeadlineExceeded when none are."""
        if request.deadline is None:
            return None
        left = request.deadline - self._clock()
        if left <= 0:
            raise DeadlineExceeded(f"no time left before the deadline to call model {self.model!r}",
                                   model=self.model, provider=self.provider)
        return left

    def _exchange(self, request: ModelRequest, features: _Features) -> _Exchange:
        left = self._time_budget(request)
        connect = self.timeout_s if left is None else min(self.timeout_s, left)
        # httpx's read timeout is only the backstop (and bounds the wait for headers); the watchdog
        # applies the real limits once the body flows.
        read = max(self.timeout_s, self.stall_s) if left is None else min(max(self.timeout_s, self.stall_s), left)
        answer_in = None if request.answer_by is None else max(0.0, request.answer_by - self._clock())
        watchdog = StreamWatchdog(first_byte_s=self.timeout_s, stall_s=self.stall_s, seconds_left=left,
                                  answer_in=answer_in)
        stream = ChatStream()
        try:
            http_request = self._client.build_request(
                "POST", self.url, content=orjson.dumps(self._body(request, features)),
                headers=self._headers(stream=features.stream),
                timeout=httpx.Timeout(connect=connect, read=read, write=connect, pool=connect))
            response = self._client.send(http_request, stream=True)
            try:
                watchdog.start(response.extensions)
                if response.status_code >= 400:
                    return _Exchange(response.status_code, response.headers,
                                     text=self._read_error_body(response, watchdog))
                if "text/event-stream" in response.headers.get("content-type", ""):
                    self._read_stream(response, watchdog, stream, request.resolved_max_tokens(), request.stop,
                                      request.stop_loops)
                    reply = self._stream_reply(request, stream, watchdog)
                else:  # not streaming (asked not to, or the server ignored `stream`)
                    reply = self._parse(self._read_body(response, watchdog), request, watchdog)
            finally:
                watchdog.finish()
                response.close()
        except _Expired as exc:
            if exc.why == "answer_by" and stream.text.strip():
                return _Exchange(200, httpx.Headers(), reply=self._cut_reply(request, stream, watchdog))
            raise self._timeout(exc.why, watchdog, stream) from None
        except httpx.TimeoutException as exc:
            raise self._timeout(timeout_kind(exc, watchdog), watchdog, stream) from None
        except httpx.ConnectError as exc:
            raise ModelError(f"cannot connect to model {self.model!r} at {self.url}: "
                             f"{self._scrub(str(exc)) or 'connection failed'}",
                             reason="connect_error", model=self.model, provider=self.provider) from None
        except httpx.TransportError as exc:
            if watchdog.fired == "answer_by" and stream.text.strip():
                return _Exchange(200, httpx.Headers(), reply=self._cut_reply(request, stream, watchdog))
            if watchdog.fired:  # we cut the connection ourselves
                raise self._timeout(watchdog.fired, watchdog, stream) from None
            raise ModelError(f"transport error talking to model {self.model!r} at {self.url}: "
                             f"{type(exc).__name__}: {self._scrub(str(exc))}",
                             reason="transport_error", model=self.model, provider=self.provider,
                             partial_chars=stream.chars) from None
        except ResponseTooLarge:
            cap = self.max_response_bytes
            raise ModelError(f"model {self.model!r} at {self.url} sent a reply over the cap of {cap} bytes "
                             f"(--max-response-bytes {cap}); stopped reading", reason="response_too_large",
                             max_response_bytes=cap, model=self.model, provider=self.provider) from None
        except UnsupportedEncoding as exc:
            raise ModelError(f"model {self.model!r} at {self.url}: {exc}", reason="bad_encoding",
                             model=self.model, provider=self.provider) from None
        return _Exchange(response.status_code, response.headers, reply=reply)

    # -- response -----------------------------------------------------------------------------

    def _read_body(self, response: httpx.Response, watchdog: StreamWatchdog) -> str:
        reader = BoundedReader(response, watchdog, self.max_response_bytes)
        return b"".join(reader).decode("utf-8", errors="replace")

    def _read_error_body(self, response: httpx.Response, watchdog: StreamWatchdog) -> str:
        reader = BoundedReader(response, watchdog, _ERROR_BODY_CAP)
        parts: list[bytes] = []
        try:
            parts.extend(reader)
        except ResponseTooLarge:
            pass  # a snippet is all we keep of an error
        return b"".join(parts).decode("utf-8", errors="replace")

    def _read_stream(self, response: httpx.Response, watchdog: StreamWatchdog, stream: ChatStream,
                     max_tokens: int = 0, stop: tuple[str, ...] = (), stop_loops: bool = True) -> None:
        sse = SSEDecoder()
        repeats, stops = RepetitionWatch(max_tokens=max_tokens), StopStrings(stop)
        try:
            # The cap is on the reply's text; the stream's framing (an event of ~100 bytes per token)
            # gets room of its own, so a reply just under the cap is read whole.
            for data in BoundedReader(response, watchdog, self.max_response_bytes * _FRAMING_ROOM):
                for name, payload in sse.feed(data):
                    added = stream.event(name, payload)
                    if added and stream.finish_reason is None:
                        if stop_loops:
                            repeats.feed(added)
                        if (end := stops.feed(added)) is not None:
                            stream.end_at(end)
                            stream.finish_reason = "stop_string"  # closing the stream stops the generation
                            self._audit("model_stop_string", chars=end)
                            return
                if stream.chars > self.max_response_bytes:
                    raise ResponseTooLarge(self.max_response_bytes, stream.chars)
                if stream.done:
                    return
                if stream.finish_reason is None and (loop := repeats.loop) is not None:
                    # Closing the connection stops the server's generation: the copies still to
                    # come could cost minutes to the token limit and say nothing.
                    stream.finish_reason = "repetition"
                    self._audit("model_repetition_stopped", chars=stream.chars, period=loop.period, copies=loop.copies)
                    return
            for name, payload in sse.close():
                stream.event(name, payload)
        except StreamError as exc:
            raise ModelError(f"model {self.model!r} at {self.url}: {self._scrub(str(exc))}", reason=exc.reason,
                             model=self.model, provider=self.provider, partial_chars=stream.chars) from None

    def _stream_reply(self, request: ModelRequest, stream: ChatStream, watchdog: StreamWatchdog) -> ModelReply:
        if not stream.done and stream.finish_reason is None:
            if watchdog.fired:
                raise _Expired(watchdog.fired)
            raise ModelError(f"model {self.model!r} at {self.url} ended the stream before the answer was "
                             f"complete ({stream.chars} characters, no finish_reason)", reason="stream_incomplete",
                             model=self.model, provider=self.provider, partial_chars=stream.chars)
        first = watchdog.elapsed_ms(watchdog.first_byte_at) if watchdog.first_byte_at is not None else None
        if stream.usage is not None:
            usage = Usage(_int(stream.usage.get("prompt_tokens")), _int(stream.usage.get("completion_tokens")),
                          watchdog.elapsed_ms(), first_byte_ms=first)
        else:  # include_usage not honoured: count chunks (~tokens) and estimate the prompt
            usage = Usage(_prompt_chars(request) // 4, stream.content_chunks, watchdog.elapsed_ms(),
                          estimated=True, first_byte_ms=first)
        return ModelReply(text=stream.text, model=stream.model or self.model, provider=self.provider, usage=usage,
                          finish_reason=stream.finish_reason)

    def _cut_reply(self, request: ModelRequest, stream: ChatStream, watchdog: StreamWatchdog) -> ModelReply:
        """The reply as far as it came when `request.answer_by` passed (finish_reason "time")."""
        self._audit("model_reply_cut", chars=stream.chars, reason="answer_by")
        stream.finish_reason = "time"
        return self._stream_reply(request, stream, watchdog)

    def _timeout(self, why: str, watchdog: StreamWatchdog, stream: ChatStream) -> ModelTimeout:
        details: dict[str, Any] = {"timeout_kind": why, "model": self.model, "provider": self.provider,
                                   "partial_chars": stream.chars}
        where = f"model {self.model!r} at {self.url}"
        if why == "first_byte":
            message = f"{where} sent nothing within {self.timeout_s:g}s (first-byte timeout, --model-timeout)"
            details["timeout_s"] = self.timeout_s
        elif why == "stall":
            message = (f"{where} stopped answering: no data for {self.stall_s:g}s after {stream.chars} characters "
                       "(stall timeout, --model-stall-s)")
            details["stall_s"] = self.stall_s
        elif why == "deadline":
            message = f"{where} was still answering when the deadline passed ({stream.chars} characters so far)"
        elif why == "answer_by":
            message = f"{where} sent no text before the time this answer had to be in by"
        else:
            message = f"{where}: {why} timeout after {self.timeout_s:g}s"
            details["timeout_s"] = self.timeout_s
        details["elapsed_s"] = round(watchdog.elapsed_ms() / 1000.0, 3)
        return ModelTimeout(message, **details)

    def _status_error(self, status: int, headers: httpx.Headers, text: str) -> ModelError:
        snippet = self._scrub(" ".join(text.split())[:_SNIPPET]) or "(empty body)"
        details: dict[str, Any] = {"status": status, "model": self.model, "provider": self.provider}
        retry_after = parse_retry_after(headers.get("retry-after"))
        if retry_after is not None:
            details["retry_after_s"] = retry_after
        return ModelError(f"model {self.model!r} at {self.url} answered HTTP {status}: {snippet}", **details)

    def _parse(self, text: str, request: ModelRequest, watchdog: StreamWatchdog) -> ModelReply:
        try:
            data = orjson.loads(text)
            choice = data["choices"][0]
            content = choice["message"]["content"]
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
            raise ModelError(f"model {self.model!r} at {self.url} sent a reply that is not a chat completion: "
                             f"{self._scrub(text[:_SNIPPET])!r}", reason="bad_envelope", model=self.model,
                             provider=self.provider) from None
        if not isinstance(content, str):
            raise ModelError(f"model {self.model!r} at {self.url} sent no message content "
                             f"(content is {type(content).__name__})", reason="bad_envelope",
                             model=self.model, provider=self.provider)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        text = cut_at_stop(content, request.stop)
        if len(text) < len(content):
            finish = "stop_string"
        return ModelReply(text=text, model=str(data.get("model") or self.model), provider=self.provider,
                          usage=Usage(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")),
                                      watchdog.elapsed_ms()),
                          finish_reason=finish if isinstance(finish, str) else None)

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, MASK) if self._api_key else text

    def _audit(self, event: str, **fields: Any) -> None:
        if self.audit is not None:
            self.audit.record(event, model=self.model, provider=self.provider, url=self.url, **fields)


_FRAMING_ROOM = 16  # body bytes a streamed reply may take per byte of its text: the events' JSON around each token


class BoundedReader:
    """Iterates a response's decoded body: capped, and checked against the watchdog after every chunk."""

    def __init__(self, response: httpx.Response, watchdog: StreamWatchdog | None, cap: int) -> None:
        self._watchdog = watchdog
        if response.is_stream_consumed:
            # httpx loads (and decodes) fixed bodies up front; only MockTransport responses get here.
            self._raw: Iterable[bytes] = [response.content]
            self._decoder = BoundedDecoder(None, cap)
        else:
            self._raw = response.iter_raw()
            self._decoder = BoundedDecoder(response.headers.get("content-encoding"), cap)

    def __iter__(self) -> Iterator[bytes]:
        watchdog = self._watchdog
        for raw in self._raw:
            if watchdog is not None:
                # Checked before the new bytes count as progress: where nothing can interrupt a
                # blocked read (no socket), a chunk that comes after the limit shows the stall.
                why = watchdog.expired()
                if why is not None:
                    raise _Expired(why)
                if raw:
                    watchdog.progress()
            for data in self._decoder.pieces(raw):
                if data:
                    yield data
        tail = self._decoder.flush()
        if tail:
            yield tail
        if watchdog is not None and watchdog.fired is not None:  # the body "ended" because we cut it
            raise _Expired(watchdog.fired)


def _prompt_chars(request: ModelRequest) -> int:
    return sum(len(m.get("content", "")) for m in request.messages)


def _int(value: Any) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0
