"""Model config validation: clear one-line errors, literal keys rejected, references checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.models.config import ConfigError, load_config, parse_config, resolve_config_path

EXAMPLE = Path(__file__).resolve().parents[2] / "agent" / "models" / "example-config.json"


def base(**extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"providers": {
        "local": {"luallm_model": "qwen2.5-7b"},
        "cloud": {"base_url": "https://api.example.com/v1", "model": "gpt", "api_key_env": "EXAMPLE_API_KEY"}}}
    cfg.update(extra)
    return cfg


def error_of(data: Any) -> str:
    with pytest.raises(ConfigError) as err:
        parse_config(data, "cfg.json")
    msg = err.value.message
    assert "\n" not in msg, "errors must be one line"
    assert err.value.code == "model_not_configured" and err.value.details["config_path"] == "cfg.json"
    return msg


def test_example_config_is_valid() -> None:
    cfg = load_config(EXAMPLE)
    assert cfg.providers["qwen-local"].kind == "luallm"
    assert cfg.providers["openai"].kind == "openai" and not cfg.providers["openai"].is_local
    assert cfg.providers["lan-server"].is_local
    assert cfg.luallm.auto_start is False and cfg.luallm.auto_stop is False


def test_minimal_config_defaults() -> None:
    cfg = parse_config(base())
    assert cfg.routing.policy == "local-first"
    assert (cfg.retry.attempts, cfg.retry.base_s, cfg.retry.cap_s) == (3, 1.0, 30.0)
    assert cfg.luallm.binary == "luallm"


def test_literal_api_key_is_rejected_without_echoing_it() -> None:
    data = base()
    data["providers"]["cloud"]["api_key"] = "sk-live-0123456789abcdef"
    msg = error_of(data)
    assert "providers.cloud" in msg and "literal API key is not allowed" in msg and "api_key_env" in msg
    assert "sk-live" not in msg


def test_key_pasted_into_api_key_env_is_rejected_without_echoing_it() -> None:
    data = base()
    data["providers"]["cloud"]["api_key_env"] = "sk-live-0123456789abcdef"
    msg = error_of(data)
    assert "providers.cloud.api_key_env" in msg and "NAME of an environment variable" in msg
    assert "sk-live" not in msg


@pytest.mark.parametrize("field", ["token", "openai_key", "auth_token", "client_secret"])
def test_other_secret_looking_fields_are_rejected(field: str) -> None:
    data = base()
    data["providers"]["cloud"][field] = "whatever-value"
    assert "literal API key" in error_of(data)


def test_unknown_provider_in_task_policy() -> None:
    msg = error_of(base(routing={"tasks": {"planning": {"prefer": ["local", "nope"]}}}))
    assert msg == ("invalid model config cfg.json: routing.tasks.planning: unknown provider 'nope' "
                   "(known: cloud, local)")


def test_unknown_provider_in_custom_rule_and_role() -> None:
    assert "routing.policies.p.rules.0: unknown provider 'x'" in error_of(
        base(routing={"policies": {"p": {"rules": [{"provider": "x"}]}}}))
    assert "routing.roles.reviewer: unknown provider 'x'" in error_of(
        base(routing={"roles": {"reviewer": {"prefer": ["x"]}}}))


def test_unknown_policy_name() -> None:
    assert "routing.policy: unknown policy 'fastest'" in error_of(base(routing={"policy": "fastest"}))
    assert "routing.tasks.review: unknown policy 'x'" in error_of(base(routing={"tasks": {"review": {"policy": "x"}}}))


def test_unknown_task_type() -> None:
    assert "unknown task type 'skill_generation'" in error_of(
        base(routing={"tasks": {"skill_generation": {"prefer": ["local"]}}}))


def test_custom_policy_cannot_shadow_builtin() -> None:
    assert "shadow" in error_of(base(routing={"policies": {"local-first": {"rules": [{"provider": "local"}]}}}))


def test_selection_needs_exactly_one_form() -> None:
    assert "not both" in error_of(base(routing={"tasks": {"review": {"prefer": ["local"], "policy": "cloud-first"}}}))
    assert "needs prefer/fallback" in error_of(base(routing={"tasks": {"review": {}}}))


def test_complexity_bounds() -> None:
    assert "min_complexity is above max_complexity" in error_of(base(routing={"policies": {"p": {"rules": [
        {"provider": "local", "min_complexity": "high", "max_complexity": "low"}]}}}))
    assert "rules.0.max_complexity" in error_of(base(routing={"policies": {"p": {"rules": [
        {"provider": "local", "max_complexity": "huge"}]}}}))
    assert "high_chars must be larger" in error_of(base(routing={"complexity": {"medium_chars": 10, "high_chars": 5}}))


def test_typos_are_unknown_fields() -> None:
    assert "luallm.auto_strat: unknown field" in error_of(base(luallm={"auto_strat": True}))


def test_bad_values() -> None:
    data = base(retry={"attempts": 0})
    data["providers"]["cloud"]["base_url"] = "api.example.com"
    msg = error_of(data)
    assert "providers.cloud.base_url: base_url must be an http(s) URL" in msg and "retry.attempts" in msg
    assert "at least one provider" in error_of({"providers": {}})
    assert "kind must be 'openai' or 'luallm'" in error_of({"providers": {"x": {"kind": "ollama", "model": "m"}}})
    assert "top level must be a JSON object" in error_of([])


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(bad)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(base()))
    assert set(load_config(good).providers) == {"local", "cloud"}


def test_config_path_resolution() -> None:
    assert resolve_config_path("flag.json", {"LUALLM_AGENT_CONFIG": "env.json"}) == "flag.json"
    assert resolve_config_path(None, {"LUALLM_AGENT_CONFIG": "env.json"}) == "env.json"
    assert resolve_config_path(None, {}) is None


def test_stall_and_streaming_are_per_provider_and_reach_the_client() -> None:
    import httpx

    from agent.models.base import ModelRequest
    from agent.models.openai_http import OpenAIChatModel
    from agent.models.routing import RoutingModel

    data = base()
    data["providers"]["cloud"].update(stall_s=15, streaming=False, timeout_s=30)
    cfg = parse_config(data)
    assert cfg.providers["cloud"].stall_s == 15 and cfg.providers["cloud"].streaming is False
    assert cfg.providers["local"].stall_s is None and cfg.providers["local"].streaming is True
    routing = RoutingModel(cfg, environ={"EXAMPLE_API_KEY": "sk-example-0123456789"}, stall_s=45,
                           max_response_bytes=1000, transport=httpx.MockTransport(lambda r: httpx.Response(404)))
    http = routing._client("cloud", cfg.providers["cloud"], ModelRequest(messages=[])).inner  # type: ignore[attr-defined]
    assert isinstance(http, OpenAIChatModel)
    assert (http.timeout_s, http.stall_s, http.streaming, http.max_response_bytes) == (30, 15, False, 1000)
    assert "stall_s" in error_of(base(providers={"x": {"base_url": "http://h/v1", "model": "m", "stall_s": 0}}))
