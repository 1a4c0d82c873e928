"""Streamed completions against httpx.MockTransport: assembly, usage, fallbacks, grammar, time limits."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from agent.errors import ModelError, ModelTimeout
from agent.models.base import ModelRequest
from agent.models.openai_http import OpenAIChatModel
from agent.models.probe import LLAMA_CPP

BASE = "http://127.0.0.1:8080/v1"
SSE = {"content-type": "text/event-stream"}
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
YES_NO = 'root ::= "yes" | "no"'


def req(**kw: Any) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": "x" * 400}], **kw)


def chunk(content: str | None = None, finish: str | None = None, **extra: Any) -> bytes:
    delta = {} if content is None else {"content": content}
    body = {"object": "chat.completion.chunk", "model": "served",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return b"data: " + orjson.dumps(body) + b"\n\n"


def usage_chunk(prompt: int, completion: int) -> bytes:
    return b"data: " + orjson.dumps({"choices": [], "usage": {"prompt_tokens": prompt,
                                                              "completion_tokens": completion}}) + b"\n\n"


DONE = b"data: [DONE]\n\n"


class Paced(httpx.SyncByteStream):
    """A response body whose chunks arrive with pauses (`(delay_s, bytes)` pairs)."""

    def __init__(self, parts: list[tuple[float, bytes]]) -> None:
        self.parts = parts

    def __iter__(self) -> Iterator[bytes]:
        for delay, data in self.parts:
            if delay:
                time.sleep(delay)
            yield data


class Server:
    def __init__(self, *responses: httpx.Response) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":  # capability probes find nothing here
            return httpx.Response(404)
        self.requests.append(request)
        return self.responses.pop(0)

    def body(self, i: int = -1) -> dict[str, Any]:
        return orjson.loads(self.requests[i].content)


def model(server: Server, **kw: Any) -> OpenAIChatModel:
    return OpenAIChatModel(BASE, "qwen", transport=httpx.MockTransport(server), **kw)


def stream(*parts: bytes) -> httpx.Response:
    return httpx.Response(200, headers=SSE, content=b"".join(parts))


# -- assembling a streamed answer ---------------------------------------------------------------

def test_stream_is_assembled_with_usage_from_the_final_chunk() -> None:
    server = Server(stream(chunk(None), chunk("Hel"), chunk("lo"), chunk(None, "stop"), usage_chunk(42, 2), DONE))
    reply = model(server).complete(req())
    assert (reply.text, reply.model, reply.finish_reason) == ("Hello", "served", "stop")
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.estimated) == (42, 2, False)
    assert reply.usage.first_byte_ms is not None


def test_without_usage_chunk_tokens_are_counted_and_marked_estimated() -> None:
    server = Server(stream(chunk("a"), chunk("b"), chunk("c", "stop"), DONE))
    reply = model(server).complete(req())
    assert reply.text == "abc"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.estimated) == (100, 3, True)
    assert reply.usage.to_dict()["estimated"] is True


def test_events_split_anywhere_with_crlf_and_comments_still_parse() -> None:
    raw = (b": keep-alive\r\n\r\n" + chunk("na").replace(b"\n", b"\r\n") + chunk("\u00efve") + chunk(None, "stop")
           + DONE)
    server = Server(httpx.Response(200, headers=SSE, content=Paced([(0, raw[i:i + 1]) for i in range(len(raw))])))
    assert model(server).complete(req()).text == "na\u00efve"


def test_cut_off_answer_says_length_and_truncated() -> None:
    reply = model(Server(stream(chunk("def f("), chunk(None, "length"), DONE))).complete(req())
    assert reply.finish_reason == "length" and reply.truncated


def test_error_event_mid_stream_is_a_model_error() -> None:
    server = Server(stream(chunk("par"), b'data: {"error": {"message": "slot unavailable"}}\n\n'))
    with pytest.raises(ModelError) as err:
        model(server).complete(req())
    assert err.value.details["reason"] == "stream_error" and "slot unavailable" in err.value.message
    assert err.value.details["partial_chars"] == 3


def test_stream_that_ends_without_finish_is_incomplete_not_an_answer() -> None:
    with pytest.raises(ModelError) as err:
        model(Server(stream(chunk("half an ans")))).complete(req())
    assert err.value.details["reason"] == "stream_incomplete" and err.value.details["partial_chars"] == 11


def test_server_that_ignores_stream_and_answers_json_is_fine(completion) -> None:
    reply = model(Server(httpx.Response(200, json=completion("plain", 5, 1)))).complete(req())
    assert (reply.text, reply.usage.completion_tokens, reply.finish_reason) == ("plain", 1, "stop")


def test_server_that_rejects_stream_gets_plain_requests_from_then_on(completion, audit) -> None:
    server = Server(httpx.Response(400, json={"error": {"message": "Unrecognized request argument: stream_options"}}),
                    httpx.Response(200, json=completion("one")), httpx.Response(200, json=completion("two")))
    m = model(server, audit=audit.log)
    assert m.complete(req()).text == "one"
    assert m.complete(req()).text == "two"
    assert [server.body(i)["stream"] for i in range(3)] == [True, False, False]
    assert "stream_options" not in server.body(2)
    assert len(audit.events("streaming_unsupported")) == 1
    assert m.capabilities().streaming is False


# -- max_tokens ---------------------------------------------------------------------------------

@pytest.mark.parametrize("role, task_type, expected", [("builder", "planning", 3072), ("reviewer", "review", 1024),
                                                       ("spec_maintainer", "spec", 1024),
                                                       ("orchestration", "intake", 1024),
                                                       ("builder", "nested", 1024), (None, "planning", 2048)])
def test_max_tokens_defaults_to_the_roles_size(role: str | None, task_type: str, expected: int) -> None:
    server = Server(stream(chunk("x", "stop")))
    model(server).complete(req(role=role, task_type=task_type))
    assert server.body()["max_tokens"] == expected


def test_explicit_max_tokens_wins() -> None:
    server = Server(stream(chunk("x", "stop")))
    model(server).complete(req(role="builder", max_tokens=300))
    assert server.body()["max_tokens"] == 300


# -- grammar and response_format ----------------------------------------------------------------

def test_grammar_is_sent_top_level_and_replaces_response_format() -> None:
    server = Server(stream(chunk("yes", "stop")))
    model(server).complete(req(grammar=YES_NO, response_schema=SCHEMA))
    body = server.body()
    assert body["grammar"] == YES_NO and "response_format" not in body


def test_schema_without_grammar_is_response_format() -> None:
    server = Server(stream(chunk("{}", "stop")))
    model(server).complete(req(response_schema=SCHEMA, schema_name="a b"))
    assert server.body()["response_format"]["json_schema"] == {"name": "a_b", "schema": SCHEMA, "strict": False}


def test_server_that_refuses_grammar_gets_none_from_then_on(audit) -> None:
    server = Server(httpx.Response(400, json={"error": {"message": "Unrecognized request argument supplied: grammar"}}),
                    stream(chunk("maybe", "stop")), stream(chunk("no", "stop")))
    m = model(server, audit=audit.log)
    assert m.complete(req(grammar=YES_NO)).text == "maybe"
    m.complete(req(grammar=YES_NO))
    assert "grammar" in server.body(0) and "grammar" not in server.body(1) and "grammar" not in server.body(2)
    assert len(audit.events("grammar_unsupported")) == 1 and m.supports_grammar is False


def test_a_refused_grammar_leaves_the_schema_it_stood_in_for(audit) -> None:
    server = Server(httpx.Response(400, json={"error": {"message": "Unrecognized request argument supplied: grammar"}}),
                    stream(chunk("{}", "stop")))
    m = model(server, audit=audit.log)
    m.complete(req(grammar=YES_NO, response_schema=SCHEMA))
    assert "grammar" in server.body(0) and "response_format" not in server.body(0)
    assert "grammar" not in server.body(1) and server.body(1)["response_format"]["json_schema"]["schema"] == SCHEMA


def test_a_bad_grammar_on_a_grammar_server_is_an_error_and_never_resent() -> None:
    server = Server(httpx.Response(400, json={"error": {"message": "failed to parse grammar"}}))
    m = model(server)
    m._caps = LLAMA_CPP  # as probed
    with pytest.raises(ModelError) as err:
        m.complete(req(grammar="root ::= ((("))
    assert err.value.details["reason"] == "grammar_rejected" and len(server.requests) == 1
    assert m.supports_grammar is None  # the server still does grammars


def test_llama_cpp_is_asked_for_prompt_progress() -> None:
    server = Server(stream(chunk(None, prompt_progress={"total": 9, "processed": 9}), chunk("ok", "stop")))
    m = model(server)
    m._caps = LLAMA_CPP
    assert m.complete(req()).text == "ok"
    assert server.body()["return_progress"] is True


def test_unknown_servers_are_not_sent_return_progress() -> None:
    server = Server(stream(chunk("ok", "stop")))
    model(server).complete(req())
    assert "return_progress" not in server.body()


# -- time limits (no socket here: checked as each chunk arrives) --------------------------------

def test_slow_stream_longer_than_the_stall_limit_in_total_succeeds() -> None:
    parts = [(0.05, chunk(str(i))) for i in range(12)] + [(0, chunk(None, "stop")), (0, DONE)]
    server = Server(httpx.Response(200, headers=SSE, content=Paced(parts)))
    started = time.monotonic()
    reply = model(server, timeout_s=0.2, stall_s=0.2).complete(req())
    assert time.monotonic() - started > 0.5  # more than twice either limit, in total
    assert reply.text == "01234567891011"


def test_stall_after_progress_is_a_stall_timeout_with_the_partial_length() -> None:
    parts = [(0, chunk("abc")), (0, chunk("de")), (0.4, chunk("late")), (0, chunk(None, "stop")), (0, DONE)]
    server = Server(httpx.Response(200, headers=SSE, content=Paced(parts)))
    with pytest.raises(ModelTimeout) as err:
        model(server, timeout_s=0.1, stall_s=0.2).complete(req())
    assert err.value.details["timeout_kind"] == "stall" and err.value.details["partial_chars"] == 5
    assert "--model-stall-s" in err.value.message


def test_nothing_within_the_first_byte_window_is_a_first_byte_timeout() -> None:
    server = Server(httpx.Response(200, headers=SSE, content=Paced([(0.3, chunk("x", "stop"))])))
    with pytest.raises(ModelTimeout) as err:
        model(server, timeout_s=0.1, stall_s=5).complete(req())
    assert err.value.details["timeout_kind"] == "first_byte" and err.value.details["partial_chars"] == 0


def test_a_lively_stream_is_still_cut_at_the_deadline() -> None:
    parts = [(0.05, chunk("x")) for _ in range(40)] + [(0, chunk(None, "stop"))]
    server = Server(httpx.Response(200, headers=SSE, content=Paced(parts)))
    started = time.monotonic()
    with pytest.raises(ModelTimeout) as err:
        model(server, timeout_s=5, stall_s=5).complete(req(deadline=time.time() + 0.5))
    assert err.value.details["timeout_kind"] == "deadline" and err.value.details["partial_chars"] > 0
    assert err.value.retriable and time.monotonic() - started < 1.5
