"""The one seam through which the agent reaches a model: `ModelClient.complete(request)`.

Implementations: OpenAI-compatible HTTP (`openai_http`), recorded responses (`recorded`), a
scripted queue for tests and fixture making (`scripted`), and routing across providers
(`routing`). Tests swap implementations instead of monkeypatching.

What a server can do for constrained output is a second, optional seam: a client that knows
implements `SupportsCapabilities.capabilities()`; wrappers (retries, audit, usage, recording) pass
the question through, and `capabilities_of(client)` finds the answer under any stack of them.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import orjson

from agent.models.limits import (
    DEFAULT_FIRST_TOKEN_S,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_STALL_S,
    default_max_tokens,
)

__all__ = ["ModelRequest", "ModelReply", "Usage", "ModelClient", "ModelSettings", "Capabilities",
           "UNKNOWN_CAPABILITIES", "SupportsCapabilities", "capabilities_of", "request_digest"]


def request_digest(messages: list[dict[str, str]]) -> str:
    """Digest of a conversation: what recorded responses are keyed by (model name excluded)."""
    canon = orjson.dumps([{"role": m["role"], "content": m["content"]} for m in messages],
                         option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(canon).hexdigest()


@dataclass
class ModelRequest:
    """One chat completion request.

    `task_type` drives routing (`planning`, `plan_repair`, `review`, `spec`, `intake`, `nested`).
    `deadline` is an absolute `time.time()` instant that no attempt or retry may pass.
    `answer_by` (absolute, before `deadline`): a streamed reply still being written then is cut and
    returned as far as it came, with `finish_reason="time"`, so the caller can use what is complete
    (a builder round keeps time to test what it got). Nothing streamed by then is a timeout.
    `max_tokens=None` means the role's default (`agent.models.limits.default_max_tokens`).
    `response_schema` is sent as `response_format: {type: json_schema}`; `grammar` (GBNF text) as
    llama.cpp's top-level `grammar`. With both, the grammar is sent (llama.cpp cannot apply both) and
    the schema only if the server refuses the grammar. Neither is a promise: the server may not support it
    (see `Capabilities`), so the answer is validated anyway.
    """

    messages: list[dict[str, str]]
    task_type: str = "planning"
    role: str | None = None
    response_schema: dict[str, Any] | None = None
    schema_name: str | None = None
    deadline: float | None = None
    max_tokens: int | None = None
    temperature: float = 0.2
    grammar: str | None = None
    answer_by: float | None = None
    stop: tuple[str, ...] = ()  # the reply ends before the first of these: finish_reason "stop_string"
    stop_loops: bool = True  # a reply fallen into an exact loop is stopped: finish_reason "repetition"

    def digest(self) -> str:
        return request_digest(self.messages)

    def resolved_max_tokens(self) -> int:
        """The `max_tokens` actually sent: the explicit value, else the role's default."""
        if self.max_tokens is not None:
            return self.max_tokens
        return default_max_tokens(self.role, self.task_type)

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.time()

    def prompt_text(self) -> str:
        return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in self.messages)


@dataclass
class Usage:
    """Tokens and time of one call; `estimated` when the server reported no usage and we counted
    (streamed chunks for the answer, characters / 4 for the prompt)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    estimated: bool = False
    first_byte_ms: float | None = None  # streamed answers: when the first byte of the answer came

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                               "latency_ms": round(self.latency_ms, 1)}
        if self.estimated:
            out["estimated"] = True
        if self.first_byte_ms is not None:
            out["first_byte_ms"] = round(self.first_byte_ms, 1)
        return out


@dataclass
class ModelReply:
    """The model's text answer plus who answered, what it cost, and why it stopped.

    `finish_reason` is the server's: "stop" (the model ended), "length" (cut at `max_tokens` or the
    server's own cap), "content_filter", ... or None when the server did not say; or the client's own
    "repetition": the streamed text fell into an exact loop and we stopped reading
    (`agent.models.repetition`), so `text` ends in a few copies of the repeated block.
    """

    text: str
    model: str = "unknown"
    provider: str = "unknown"
    usage: Usage = field(default_factory=Usage)
    attempts: int = 1
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        """True when the answer was cut off at the token limit: ask for less rather than resend."""
        return self.finish_reason in ("length", "repetition")


@runtime_checkable
class ModelClient(Protocol):
    """Anything that turns a request into a reply or raises an `agent.errors.ModelError`."""

    def complete(self, request: ModelRequest) -> ModelReply: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Capabilities:
    """What a model server does beyond plain chat completions.

    `streaming`: SSE completions (`"stream": true`). `json_schema`: `response_format` with a JSON
    Schema is enforced. `grammar`: a GBNF `grammar` field is enforced (llama.cpp). `server` names
    what answered: "llama.cpp", "vllm", "ollama", "openai", "unknown", or a non-HTTP client's kind
    ("recorded", "scripted"). vLLM enforces grammars too, but through `guided_grammar` in its own
    EBNF dialect, which this agent does not send: `grammar` is False there. `prefill`: a request whose
    last message is the assistant's is continued from that text rather than answered anew (llama.cpp's
    server does so unless started with `--no-prefill-assistant`).
    """

    streaming: bool = True
    json_schema: bool = True
    grammar: bool = False
    server: str = "unknown"
    prefill: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"streaming": self.streaming, "json_schema": self.json_schema, "grammar": self.grammar,
                "server": self.server, "prefill": self.prefill}


# What to assume of a server nobody has probed: plain completions; a schema may be sent (a server
# that refuses it gets the plain request), a grammar may not.
UNKNOWN_CAPABILITIES = Capabilities(streaming=False, json_schema=True, grammar=False, server="unknown")


@runtime_checkable
class SupportsCapabilities(Protocol):
    """A client that can say what its server supports. Probing happens at most once per process.

    `request` lets a routing client answer for the provider that would serve that request (its
    role and task type); without it, for the default route.
    """

    def capabilities(self, request: ModelRequest | None = None) -> Capabilities: ...


def capabilities_of(client: object, request: ModelRequest | None = None) -> Capabilities | None:
    """The capabilities of `client` or of the first client it wraps (`.inner`/`.client`) that knows.

    None when nothing in the stack can say; callers then assume plain chat completions only.
    """
    seen: set[int] = set()
    current: object | None = client
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, SupportsCapabilities):
            return current.capabilities(request)
        current = getattr(current, "inner", None) or getattr(current, "client", None)
    return None


@dataclass
class ModelSettings:
    """Model-related settings gathered from flags and the environment by the CLI."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    config_path: str | None = None
    responses_path: str | None = None  # recorded responses to serve from (replay)
    record_path: str | None = None     # append every exchange here
    timeout_s: float = DEFAULT_FIRST_TOKEN_S  # connect + wait for the first streamed byte
    stall_s: float = DEFAULT_STALL_S          # longest silence once the answer streams
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
