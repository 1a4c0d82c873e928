"""Capability probing (once per process) and the capabilities seam through every wrapper."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agent.models.base import (
    UNKNOWN_CAPABILITIES,
    Capabilities,
    ModelRequest,
    SupportsCapabilities,
    capabilities_of,
)
from agent.models.config import parse_config
from agent.models.openai_http import OpenAIChatModel
from agent.models.recorded import RECORDED_CAPABILITIES, RecordedModel
from agent.models.recorder import RecordingModel
from agent.models.retry import RetryingModel
from agent.models.routing import RoutingModel
from agent.models.scripted import SCRIPTED_CAPABILITIES, ScriptedModel
from agent.models.usage import AuditedModel, UsageTracker
from agent.redact import Redactor

BASE = "http://127.0.0.1:8080/v1"


class Docs:
    """MockTransport answering GETs from a path → JSON table (404 otherwise), counting them."""

    def __init__(self, **docs: Any) -> None:
        self.docs = {k.replace("__", "/"): v for k, v in docs.items()}
        self.gets: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.gets.append(request.url.path)
        doc = self.docs.get(request.url.path)
        return httpx.Response(404) if doc is None else httpx.Response(200, json=doc)


def client(docs: Docs, base: str = BASE, **kw: Any) -> OpenAIChatModel:
    return OpenAIChatModel(base, "m", transport=httpx.MockTransport(docs), **kw)


def models(owner: str) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": owner}]}


@pytest.mark.parametrize("docs, server, grammar", [
    (Docs(**{"/props": {"default_generation_settings": {}, "build_info": "b6000"}}), "llama.cpp", True),
    (Docs(**{"/v1/models": models("llamacpp")}), "llama.cpp", True),
    (Docs(**{"/v1/models": models("vllm")}), "vllm", False),
    (Docs(**{"/v1/models": models("library"), "/api/version": {"version": "0.12.1"}}), "ollama", False),
    (Docs(**{"/v1/models": models("system")}), "openai", False),
    (Docs(), "unknown", False),
])
def test_probe_names_the_server_and_what_it_enforces(docs: Docs, server: str, grammar: bool) -> None:
    caps = client(docs).capabilities()
    assert (caps.server, caps.grammar, caps.json_schema, caps.streaming) == (server, grammar, True, True)


def test_probe_runs_once_per_process_per_endpoint() -> None:
    docs = Docs(**{"/props": {"build_info": "b1"}})
    assert client(docs).capabilities().grammar
    assert client(docs).capabilities().grammar  # another client, same endpoint: no new probe
    assert docs.gets == ["/props"]
    client(docs, base="http://127.0.0.1:9090/v1").capabilities()
    assert docs.gets == ["/props", "/props"]


def test_unknown_server_keeps_the_configured_json_schema_setting() -> None:
    assert client(Docs(), supports_json_schema=False).capabilities().json_schema is False


def test_capabilities_lose_what_the_server_refused_later() -> None:
    c = client(Docs(**{"/props": {"build_info": "b1"}}))
    c.streaming = False
    c.supports_grammar = False
    caps = c.capabilities()
    assert (caps.server, caps.streaming, caps.grammar, caps.json_schema) == ("llama.cpp", False, False, True)


def test_unreachable_server_is_unknown_not_an_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    caps = OpenAIChatModel(BASE, "m", transport=httpx.MockTransport(refuse)).capabilities()
    assert caps.server == "unknown" and caps.grammar is False


def test_probe_is_audited_once(audit) -> None:
    c = client(Docs(**{"/props": {"build_info": "b1"}}), audit=audit.log)
    c.capabilities()
    c.capabilities()
    (event,) = audit.events("model_capabilities")
    assert event["server"] == "llama.cpp" and event["grammar"] is True


# -- the seam through wrappers and other clients --------------------------------------------------

def test_capabilities_are_found_under_every_wrapper(tmp_path: Path, audit) -> None:
    http = client(Docs(**{"/props": {"build_info": "b1"}}))
    stack = UsageTracker(RecordingModel(AuditedModel(RetryingModel(http), audit.log), tmp_path / "r.jsonl",
                                        Redactor({})))
    assert isinstance(stack, SupportsCapabilities)
    assert stack.capabilities().server == "llama.cpp"
    assert capabilities_of(stack) == http.capabilities()
    # RecordingModel has no method of its own: capabilities_of looks through it.
    assert capabilities_of(stack.client).server == "llama.cpp"  # type: ignore[union-attr]


def test_nothing_that_knows_gives_none_or_the_unknown_default() -> None:
    class Bare:
        def complete(self, request: ModelRequest) -> Any: ...

        def close(self) -> None: ...

    assert capabilities_of(Bare()) is None
    assert UsageTracker(Bare()).capabilities() == UNKNOWN_CAPABILITIES


def test_scripted_capabilities_are_configurable() -> None:
    assert ScriptedModel([]).capabilities() == SCRIPTED_CAPABILITIES
    grammar = Capabilities(streaming=False, json_schema=True, grammar=True, server="scripted")
    assert ScriptedModel([], capabilities=grammar).capabilities().grammar is True


def test_scripted_can_script_a_cut_off_answer() -> None:
    m = ScriptedModel(["def f(", "ok"], finish_reasons=["length"])
    first = m.complete(ModelRequest(messages=[{"role": "user", "content": "x"}]))
    second = m.complete(ModelRequest(messages=[{"role": "user", "content": "y"}]))
    assert first.truncated and not second.truncated and second.finish_reason == "stop"


def test_recorded_capabilities_come_from_the_recording(tmp_path: Path) -> None:
    r = ModelRequest(messages=[{"role": "user", "content": "x"}])
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(orjson.dumps({"digest": r.digest(), "reply": {"text": "a"}}) + b"\n")
    assert RecordedModel(plain).capabilities() == RECORDED_CAPABILITIES
    tagged = tmp_path / "tagged.jsonl"
    tagged.write_text(json.dumps({"digest": r.digest(), "reply": {"text": "a", "finish_reason": "length"},
                                  "capabilities": {"streaming": True, "json_schema": True, "grammar": True,
                                                   "server": "llama.cpp"}}) + "\n")
    model = RecordedModel(tagged)
    assert model.capabilities() == Capabilities(True, True, True, "llama.cpp")
    assert model.complete(r).truncated


def test_routing_answers_for_the_provider_that_would_serve_the_request() -> None:
    config = parse_config({
        "providers": {"local": {"base_url": "http://127.0.0.1:8080/v1", "model": "qwen"},
                      "cloud": {"base_url": "https://api.example.com/v1", "model": "gpt-x"}},
        "routing": {"roles": {"reviewer": {"prefer": ["cloud"]}}},
    })
    docs = Docs(**{"/props": {"build_info": "b1"}})

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.example.com":
            return httpx.Response(200, json=models("system")) if request.url.path == "/v1/models" \
                else httpx.Response(404)
        return docs(request)

    routing = RoutingModel(config, transport=httpx.MockTransport(handler))
    assert routing.capabilities().server == "llama.cpp"  # local-first
    reviewer = ModelRequest(messages=[], role="reviewer", task_type="review")
    assert routing.capabilities(reviewer).server == "openai"
    assert UsageTracker(routing).capabilities(reviewer).grammar is False
