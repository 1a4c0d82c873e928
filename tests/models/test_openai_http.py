"""OpenAIChatModel against httpx.MockTransport: parsing, errors, timeouts, deadlines, response_format."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

from agent.errors import DeadlineExceeded, ModelError, ModelTimeout
from agent.models.base import ModelRequest
from agent.models.openai_http import OpenAIChatModel
from agent.models.retry import RetryingModel, RetryPolicy

BASE = "http://127.0.0.1:8080/v1"
KEY = "sk-test-SECRET-abcdef123456"
SCHEMA = {"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]}


def req(**kw: Any) -> ModelRequest:
    return ModelRequest(messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}], **kw)


class Server:
    """A MockTransport handler answering from a queue and remembering every request."""

    def __init__(self, *responses: httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        item = self.responses.pop(0)
        if isinstance(item, Exception):
            raise item
        if callable(item):
            return item(request)
        return item

    def body(self, i: int = -1) -> dict[str, Any]:
        return orjson.loads(self.requests[i].content)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


def model(server: Server, **kw: Any) -> OpenAIChatModel:
    kw.setdefault("timeout_s", 30.0)
    return OpenAIChatModel(BASE, "qwen", KEY, transport=server.transport(), **kw)


def test_success_parses_content_usage_and_sends_the_request(completion) -> None:
    server = Server(httpx.Response(200, json=completion("hello", 42, 9, model="qwen-served")))
    reply = model(server, provider="lan").complete(req(max_tokens=100, temperature=0.0))
    assert reply.text == "hello"
    assert reply.model == "qwen-served" and reply.provider == "lan"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (42, 9)
    assert reply.usage.latency_ms >= 0
    sent = server.requests[0]
    assert str(sent.url) == f"{BASE}/chat/completions" and sent.method == "POST"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = server.body()
    assert body["model"] == "qwen" and body["messages"][1] == {"role": "user", "content": "hi"}
    assert body["max_tokens"] == 100 and body["temperature"] == 0.0
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "response_format" not in body and "grammar" not in body
    assert reply.finish_reason == "stop" and not reply.truncated


def test_no_authorization_header_without_a_key(completion) -> None:
    server = Server(httpx.Response(200, json=completion("x")))
    OpenAIChatModel(BASE, "qwen", transport=server.transport()).complete(req())
    assert "authorization" not in server.requests[0].headers


def test_missing_usage_counts_zero() -> None:
    server = Server(httpx.Response(200, json={"choices": [{"message": {"content": "x"}}]}))
    reply = model(server).complete(req())
    assert (reply.text, reply.model, reply.usage.prompt_tokens) == ("x", "qwen", 0)


@pytest.mark.parametrize("body", [b"not json", b'{"choices": []}', b'{"choices": [{"message": {"content": null}}]}'])
def test_bad_envelope_is_a_model_error(body: bytes) -> None:
    server = Server(httpx.Response(200, content=body))
    with pytest.raises(ModelError) as err:
        model(server).complete(req())
    assert err.value.details["reason"] == "bad_envelope"


def test_json_schema_response_format_is_sent(completion) -> None:
    server = Server(httpx.Response(200, json=completion('{"plan": "x"}')))
    model(server).complete(req(response_schema=SCHEMA, schema_name="plan answer!"))
    rf = server.body()["response_format"]
    assert rf == {"type": "json_schema", "json_schema": {"name": "plan_answer_", "schema": SCHEMA, "strict": False}}


def test_provider_without_json_schema_gets_plain_request(completion) -> None:
    server = Server(httpx.Response(200, json=completion("{}")))
    model(server, supports_json_schema=False).complete(req(response_schema=SCHEMA))
    assert "response_format" not in server.body()


def test_rejected_response_format_falls_back_once_and_is_remembered(completion, audit) -> None:
    server = Server(
        httpx.Response(400, json={"error": {"message": "Unrecognized request argument: response_format"}}),
        httpx.Response(200, json=completion('{"plan": "a"}')),
        httpx.Response(200, json=completion('{"plan": "b"}')),
    )
    m = model(server, audit=audit.log)
    assert m.complete(req(response_schema=SCHEMA)).text == '{"plan": "a"}'
    assert "response_format" in server.body(0) and "response_format" not in server.body(1)
    assert m.supports_json_schema is False
    m.complete(req(response_schema=SCHEMA))
    assert len(server.requests) == 3 and "response_format" not in server.body(2)
    assert len(audit.events("response_format_unsupported")) == 1


def test_unrelated_400_is_not_a_schema_fallback() -> None:
    server = Server(httpx.Response(400, json={"error": {"message": "context length exceeded"}}))
    with pytest.raises(ModelError, match="HTTP 400.*context length"):
        model(server).complete(req(response_schema=SCHEMA))
    assert len(server.requests) == 1


def test_http_error_message_is_clear_and_never_contains_the_key(audit) -> None:
    # Some providers echo the key back in their error; it must not survive into our message.
    server = Server(httpx.Response(401, json={"error": f"Incorrect API key provided: {KEY}"}))
    with pytest.raises(ModelError) as err:
        model(server, audit=audit.log).complete(req())
    text = str(err.value) + orjson.dumps(err.value.payload()).decode()
    assert "HTTP 401" in text and BASE in text
    assert KEY not in text and "[REDACTED]" in text
    assert err.value.details["status"] == 401
    assert KEY not in repr(model(Server()))


def test_connect_error_is_a_model_error_naming_the_url() -> None:
    server = Server(httpx.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(ModelError) as err:
        model(server).complete(req())
    assert type(err.value) is ModelError
    assert "cannot connect" in err.value.message and BASE in err.value.message
    assert err.value.details["reason"] == "connect_error"


@pytest.mark.parametrize("exc, kind", [(httpx.ReadTimeout("timed out"), "first_byte"),
                                       (httpx.ConnectTimeout("timed out"), "connect")])
def test_timeouts_become_model_timeout(exc: Exception, kind: str) -> None:
    with pytest.raises(ModelTimeout) as err:
        model(Server(exc)).complete(req())
    assert err.value.details["timeout_kind"] == kind
    assert err.value.retriable is True


def test_timeout_is_bounded_by_the_deadline(completion) -> None:
    seen: dict[str, Any] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        seen.update(request.extensions["timeout"])
        return httpx.Response(200, json=completion("x"))

    model(Server(answer), timeout_s=120.0).complete(req(deadline=time.time() + 5))
    assert 0 < seen["read"] <= 5 and 0 < seen["connect"] <= 5


def test_timeout_uses_timeout_s_when_deadline_is_far(completion) -> None:
    seen: dict[str, Any] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        seen.update(request.extensions["timeout"])
        return httpx.Response(200, json=completion("x"))

    model(Server(answer), timeout_s=7.0, stall_s=3.0).complete(req(deadline=time.time() + 500))
    assert seen["connect"] == 7.0 and seen["read"] == 7.0


def test_httpx_read_timeout_is_only_a_backstop_as_long_as_the_longest_silence(completion) -> None:
    seen: dict[str, Any] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        seen.update(request.extensions["timeout"])
        return httpx.Response(200, json=completion("x"))

    model(Server(answer), timeout_s=7.0, stall_s=30.0).complete(req())
    assert seen["connect"] == 7.0 and seen["read"] == 30.0


def test_no_time_left_raises_deadline_exceeded_without_sending() -> None:
    server = Server()
    with pytest.raises(DeadlineExceeded):
        model(server).complete(req(deadline=time.time() - 1))
    assert server.requests == []


def test_retry_after_header_is_parsed_into_details() -> None:
    server = Server(httpx.Response(429, headers={"Retry-After": "3"}, json={"error": "rate limited"}))
    with pytest.raises(ModelError) as err:
        model(server).complete(req())
    assert err.value.details["retry_after_s"] == 3.0


# -- with retries -------------------------------------------------------------------------------

def test_429_with_retry_after_then_success(completion, audit, fake_sleep) -> None:
    server = Server(httpx.Response(429, headers={"Retry-After": "2"}, json={"error": "slow down"}),
                    httpx.Response(200, json=completion("done")))
    client = RetryingModel(model(server, audit=audit.log), RetryPolicy(attempts=3), audit=audit.log,
                           sleep=fake_sleep, clock=fake_sleep.clock)
    reply = client.complete(req())
    assert reply.text == "done" and reply.attempts == 2
    assert fake_sleep.calls == [2.0]
    assert [e["outcome"] for e in audit.events("model_attempt")] == ["error", "ok"]


def test_500_every_time_fails_after_attempts(fake_sleep) -> None:
    server = Server(*[httpx.Response(500, text="internal error") for _ in range(4)])
    client = RetryingModel(model(server), RetryPolicy(attempts=4, base_s=1, cap_s=8), sleep=fake_sleep,
                           rand=lambda: 1.0, clock=fake_sleep.clock)
    with pytest.raises(ModelError, match="HTTP 500: internal error") as err:
        client.complete(req())
    assert len(server.requests) == 4 and fake_sleep.calls == [1.0, 2.0, 4.0]
    assert err.value.details["attempts"] == 4


def test_key_never_reaches_the_audit_log(completion, audit, fake_sleep) -> None:
    server = Server(httpx.Response(503, text=f"overloaded (key {KEY})"),
                    httpx.Response(400, text="bad response_format"),
                    httpx.Response(200, json=completion("ok")))
    client = RetryingModel(model(server, audit=audit.log), RetryPolicy(attempts=3), audit=audit.log,
                           sleep=fake_sleep, clock=fake_sleep.clock)
    client.complete(req(response_schema=SCHEMA))
    raw = audit.raw()
    assert raw and KEY not in raw and "Bearer" not in raw
