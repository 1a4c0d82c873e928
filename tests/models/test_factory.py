"""build_model_client precedence, model_call auditing, and per-command usage tracking."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import orjson
import pytest

from agent.errors import ModelError, ModelNotConfigured, ReplayMiss
from agent.models.base import ModelReply, ModelRequest, ModelSettings, Usage
from agent.models.config import ConfigError
from agent.models.factory import UsageTracker, build_model_client
from agent.models.scripted import ScriptedModel
from agent.redact import Redactor


def req(text: str = "hello") -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": text}])


def reply_body(text: str) -> dict:
    return {"model": "served", "choices": [{"message": {"content": text}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3}}


def test_nothing_configured_gives_none(audit) -> None:
    assert build_model_client(ModelSettings(), audit.log, Redactor({}), environ={}) is None


def test_replay_wins_and_never_touches_the_network(tmp_path: Path, audit) -> None:
    rec = tmp_path / "r.jsonl"
    rec.write_bytes(orjson.dumps({"digest": req().digest(), "request": {"messages": req().messages},
                                  "reply": {"text": "recorded!", "model": "m"}}) + b"\n")

    def no_network(request: httpx.Request) -> httpx.Response:
        raise AssertionError("replay must not use the network")

    settings = ModelSettings(responses_path=str(rec), base_url="http://127.0.0.1:1/v1", model="x")
    client = build_model_client(settings, audit.log, Redactor({}), environ={},
                                transport=httpx.MockTransport(no_network))
    assert client is not None and client.complete(req()).text == "recorded!"
    with pytest.raises(ReplayMiss):
        client.complete(req("other"))
    calls = audit.events("model_call")
    assert [c["outcome"] for c in calls] == ["ok", "error"] and calls[1]["error"] == "replay_miss"


def test_bad_replay_file_is_not_configured(tmp_path: Path, audit) -> None:
    bad = tmp_path / "r.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(ModelNotConfigured, match="cannot load recorded responses"):
        build_model_client(ModelSettings(responses_path=str(bad)), audit.log, Redactor({}), environ={})


def test_base_url_and_model_give_an_http_client_with_retry(audit) -> None:
    answers = [httpx.Response(503, text="warming up"), httpx.Response(200, json=reply_body("hi there"))]
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":  # the capability probe
            return httpx.Response(404)
        sent.append(request)
        return answers.pop(0)

    redactor = Redactor({})
    settings = ModelSettings(base_url="http://127.0.0.1:9/v1", model="qwen", api_key="sk-direct-abcdef123")
    client = build_model_client(settings, audit.log, redactor, environ={}, transport=httpx.MockTransport(handler),
                                sleep=lambda s: None)
    assert client is not None
    reply = client.complete(req())
    assert reply.text == "hi there" and reply.attempts == 2
    call = audit.events("model_call")[0]
    assert call["model"] == "served" and call["provider"] == "openai" and call["digest"] == req().digest()
    assert call["usage"]["prompt_tokens"] == 12 and call["usage"]["completion_tokens"] == 3
    assert call["tokens_in"] == 12 and call["tokens_out"] == 3 and "latency_ms" in call
    assert redactor.text("key sk-direct-abcdef123") == "key [REDACTED]"


def test_config_file_gives_routing(tmp_path: Path, audit) -> None:
    cfg = tmp_path / "models.json"
    cfg.write_text(json.dumps({"providers": {"c": {"base_url": "https://api.example.com/v1", "model": "g",
                                                   "api_key_env": "MY_PROVIDER_CRED"}}}))
    redactor = Redactor({})
    transport = httpx.MockTransport(lambda r: httpx.Response(200, json=reply_body("routed")))
    client = build_model_client(ModelSettings(), audit.log, redactor,
                                environ={"LUALLM_AGENT_CONFIG": str(cfg), "MY_PROVIDER_CRED": "cred-value-123"},
                                transport=transport)
    assert client is not None and client.complete(req()).provider == "c"
    # The variable's name does not end in _KEY, yet its value is scrubbed everywhere.
    assert redactor.text("x cred-value-123") == "x [REDACTED]"


def test_invalid_config_file_raises_config_error(tmp_path: Path, audit) -> None:
    cfg = tmp_path / "models.json"
    cfg.write_text(json.dumps({"providers": {"c": {"base_url": "https://x/v1", "model": "g", "api_key": "sk-1"}}}))
    with pytest.raises(ConfigError, match="literal API key"):
        build_model_client(ModelSettings(config_path=str(cfg)), audit.log, Redactor({}), environ={})


def test_record_path_wraps_and_record_replay_same_file_is_refused(tmp_path: Path, audit) -> None:
    out = tmp_path / "out.jsonl"
    transport = httpx.MockTransport(lambda r: httpx.Response(200, json=reply_body("live")))
    settings = ModelSettings(base_url="http://127.0.0.1:9/v1", model="q", record_path=str(out))
    client = build_model_client(settings, audit.log, Redactor({}), environ={}, transport=transport)
    assert client is not None
    client.complete(req())
    replayed = build_model_client(ModelSettings(responses_path=str(out)), None, Redactor({}), environ={})
    assert replayed is not None and replayed.complete(req()).text == "live"
    with pytest.raises(ModelNotConfigured, match="same file"):
        build_model_client(ModelSettings(responses_path=str(out), record_path=str(out)), None, Redactor({}),
                           environ={})


class Fixed:
    def __init__(self, *replies: ModelReply) -> None:
        self.replies = list(replies)

    def complete(self, request: ModelRequest) -> ModelReply:
        item = self.replies.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def close(self) -> None:
        pass


def test_usage_tracker_sums_per_command() -> None:
    tracker = UsageTracker(Fixed(ModelReply("a", "m1", usage=Usage(10, 2)), ModelReply("b", "m2", usage=Usage(5, 1)),
                                 ModelReply("c", "m1", usage=Usage(1, 1)), ModelError("down")))
    tracker.complete(req())
    tracker.complete(req())
    tracker.complete(req())
    assert tracker.summary() == {"calls": 3, "prompt_tokens": 16, "completion_tokens": 4, "models": ["m1", "m2"]}
    tracker.reset()
    assert tracker.summary() == {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "models": []}
    with pytest.raises(ModelError):
        tracker.complete(req())
    assert tracker.summary()["calls"] == 0


def test_usage_tracker_works_with_any_client() -> None:
    tracker = UsageTracker(ScriptedModel(["x" * 40]))
    tracker.complete(req("p" * 80))
    assert tracker.summary() == {"calls": 1, "prompt_tokens": 21, "completion_tokens": 10, "models": ["scripted"]}
