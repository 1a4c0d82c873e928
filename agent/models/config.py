"""The model config file: named providers, retry settings, luallm settings and routing policy.

The path comes from `--config` or `LUALLM_AGENT_CONFIG`. The file is JSON (see
`agent/models/example-config.json`); every object rejects unknown fields, so typos fail loudly with
one-line `ConfigError`s such as `providers.cloud: a literal API key is not allowed ...`.

Top level
---------
`$schema`       optional, free text (e.g. "luallm-agent-models-v1"); ignored.
`providers`     required, object name → provider; at least one. Names are what policies refer to.
`luallm`        optional, settings of the luallm CLI (below).
`retry`         optional, backoff for HTTP calls (below).
`routing`       optional, which providers serve which requests (below).
`disable_repairs` optional, names of the agent's repairs to switch off, as `--disable-repair`
                (`luallm-agent repairs` lists them; an unknown name is refused at start).

Provider, OpenAI-compatible endpoint (chosen when there is no `luallm_model`)
-----------------------------------------------------------------------------
`kind`                  optional, "openai".
`base_url`              required, e.g. "http://127.0.0.1:8080/v1" or "https://api.openai.com/v1";
                        requests go to `{base_url}/chat/completions`.
`model`                 required, the model name sent in the request.
`api_key_env`           optional, the NAME of the environment variable holding the key (e.g.
                        "OPENAI_API_KEY"). A literal key anywhere in the file is rejected: files get
                        committed, pasted and backed up; the environment does not.
`timeout_s`             optional, seconds to connect and receive the first byte of the answer (which
                        includes prompt processing; default 120; the command deadline still wins).
`stall_s`               optional, longest silence in seconds once the answer streams (default:
                        `--model-stall-s`, 60). A stream that keeps producing is never cut otherwise.
`streaming`             optional, stream answers as server-sent events (default true; switched off
                        automatically if the server rejects `stream`).
`supports_json_schema`  optional, send `response_format: json_schema` for structured answers
                        (default true; switched off automatically if the server rejects it).
`locality`              optional, "local" | "cloud"; default: local when the host is 127.0.0.1,
                        localhost or ::1, else cloud. Drives the `local-first` / `cloud-first` policies.
`notes`                 optional, Markdown routing notes in the convention of `agent.models.notes`
                        (for endpoints luallm does not manage).
`answers`               optional, the answer form for `--answers auto`: "auto" (default: decided from
                        the server's capabilities), "text", "plan", "json" or "grammar" (`agent.answering.answer_form`).

Provider, luallm-managed local model (chosen when `luallm_model` is present)
----------------------------------------------------------------------------
`kind`                  optional, "luallm".
`luallm_model`          required, the EXACT luallm model name (an inexact one opens luallm's
                        interactive picker).
`binary`                optional, luallm binary for this model (default: `luallm.binary`).
`timeout_s` (default 300), `stall_s`, `streaming`, `supports_json_schema`, `notes`, `answers` as
above; `locality` is always "local".
The endpoint is `http://127.0.0.1:<port>/v1` with the port read fresh from `luallm status --json`.

`luallm`
--------
`binary` ("luallm"), `auto_start` (false: a stopped model fails with model_not_running and the start
command), `auto_stop` (false: when true, models this process started are stopped at exit),
`command_timeout_s` (15), `ready_timeout_s` (120, wait for /health after a start or while loading),
`health_timeout_s` (2).

`retry`
-------
`attempts` (3, including the first), `base_s` (1.0), `cap_s` (30.0): full-jitter exponential backoff;
`Retry-After` is honoured up to `cap_s`.

`routing`
---------
`policy`        default policy: "local-first" (built in, the default), "cloud-first" (built in), or
                the name of a custom policy in `policies`.
`policies`      object name → {"rules": [{"provider", "priority" (lower first, default 100),
                "max_complexity"?, "min_complexity"?}]}: a rule applies only when the request's
                estimated complexity is within its bounds.
`tasks`         object task type → selection; task types are planning, plan_repair, review, spec,
                intake, nested, plus "default" for the rest. A selection is either
                {"prefer": [...], "fallback": [...]} (provider names, tried in that order) or
                {"policy": "<name>"}.
`roles`         object role name → selection; overrides `tasks` for requests from that role.
`complexity`    {"medium_chars": 8000, "high_chars": 32000}: prompts shorter than `medium_chars`
                characters are low, shorter than `high_chars` medium, else high.

Precedence for a request: `roles[role]`, then `tasks[task_type]`, then `tasks.default`, then
`policy`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlparse

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from agent.errors import ModelNotConfigured

__all__ = [
    "ConfigError", "ModelConfig", "OpenAIProvider", "LuallmProvider", "Provider", "RetrySettings",
    "LuallmSettings", "Selection", "Rule", "CustomPolicy", "ComplexitySettings", "RoutingSettings",
    "TASK_TYPES", "BUILTIN_POLICIES", "COMPLEXITY_LEVELS", "CONFIG_ENV", "load_config", "parse_config",
    "resolve_config_path",
]

CONFIG_ENV = "LUALLM_AGENT_CONFIG"
TASK_TYPES = ("planning", "plan_repair", "review", "spec", "intake", "nested")
BUILTIN_POLICIES = ("local-first", "cloud-first")
COMPLEXITY_LEVELS = ("low", "medium", "high")
Complexity = Literal["low", "medium", "high"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_LITERAL_KEY_FIELDS = frozenset({"api_key", "key", "token", "secret", "password", "authorization", "bearer"})
_LITERAL_KEY_MSG = ("a literal API key is not allowed in the config file; put it in an environment "
                    "variable and set api_key_env to that variable's NAME")


class ConfigError(ModelNotConfigured):
    """The model config file is missing, not JSON, or invalid; the message is one line."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _reject_literal_keys(data: Any) -> Any:
    """Give key-looking fields a clear message instead of pydantic's generic "extra field"."""
    if isinstance(data, dict):
        for k in data:
            low = str(k).lower()
            if low != "api_key_env" and (low in _LITERAL_KEY_FIELDS or low.endswith(("_key", "_token", "_secret"))):
                raise ValueError(_LITERAL_KEY_MSG)
    return data


class OpenAIProvider(_Strict):
    """An OpenAI-compatible chat completions endpoint."""

    kind: Literal["openai"] = "openai"
    base_url: str
    model: str = Field(min_length=1)
    api_key_env: str | None = None
    timeout_s: float = Field(120.0, gt=0)
    stall_s: float | None = Field(None, gt=0)
    streaming: bool = True
    supports_json_schema: bool = True
    locality: Literal["local", "cloud"] | None = None
    notes: str | None = None
    answers: Literal["auto", "text", "lua", "plan", "json", "grammar"] = "auto"

    @model_validator(mode="before")
    @classmethod
    def _no_literal_key(cls, data: Any) -> Any:
        return _reject_literal_keys(data)

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        u = urlparse(v)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise ValueError("base_url must be an http(s) URL such as http://127.0.0.1:8080/v1")
        if u.username or u.password:
            raise ValueError("base_url must not carry credentials; use api_key_env")
        return v.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        # Never echo the value: if it is not a variable name it may well be the key itself.
        if v is not None and not _ENV_NAME.match(v):
            raise ValueError("api_key_env must be the NAME of an environment variable (e.g. OPENAI_API_KEY), "
                             "not the key itself")
        return v

    @property
    def is_local(self) -> bool:
        if self.locality is not None:
            return self.locality == "local"
        return (urlparse(self.base_url).hostname or "") in _LOCAL_HOSTS

    @property
    def label(self) -> str:
        return self.model


class LuallmProvider(_Strict):
    """A local model managed by luallm; its port is looked up on every call."""

    kind: Literal["luallm"] = "luallm"
    luallm_model: str = Field(min_length=1)
    binary: str | None = None
    timeout_s: float = Field(300.0, gt=0)
    stall_s: float | None = Field(None, gt=0)
    streaming: bool = True
    supports_json_schema: bool = True
    locality: Literal["local"] = "local"
    notes: str | None = None
    answers: Literal["auto", "text", "lua", "plan", "json", "grammar"] = "auto"

    @model_validator(mode="before")
    @classmethod
    def _no_literal_key(cls, data: Any) -> Any:
        return _reject_literal_keys(data)

    @property
    def is_local(self) -> bool:
        return True

    @property
    def label(self) -> str:
        return self.luallm_model


def _provider_kind(data: Any) -> str:
    if isinstance(data, dict):
        kind = data.get("kind")
        if kind in ("openai", "luallm"):
            return str(kind)
        return "luallm" if "luallm_model" in data else "openai"
    return "luallm" if isinstance(data, LuallmProvider) else "openai"


Provider = Annotated[
    Annotated[OpenAIProvider, Tag("openai")] | Annotated[LuallmProvider, Tag("luallm")],
    Discriminator(_provider_kind),
]


class RetrySettings(_Strict):
    attempts: int = Field(3, ge=1, le=10)
    base_s: float = Field(1.0, ge=0)
    cap_s: float = Field(30.0, gt=0)


class LuallmSettings(_Strict):
    binary: str = Field("luallm", min_length=1)
    auto_start: bool = False
    auto_stop: bool = False
    command_timeout_s: float = Field(15.0, gt=0)
    ready_timeout_s: float = Field(120.0, gt=0)
    health_timeout_s: float = Field(2.0, gt=0)


class Selection(_Strict):
    """Either explicit `prefer` + `fallback` provider lists, or the name of a policy."""

    prefer: list[str] = Field(default_factory=list)
    fallback: list[str] = Field(default_factory=list)
    policy: str | None = None

    @model_validator(mode="after")
    def _one_way(self) -> Selection:
        if self.policy is not None and (self.prefer or self.fallback):
            raise ValueError("give either prefer/fallback or policy, not both")
        if self.policy is None and not self.prefer and not self.fallback:
            raise ValueError("needs prefer/fallback provider names or a policy")
        return self


class Rule(_Strict):
    provider: str
    priority: int = 100
    max_complexity: Complexity | None = None
    min_complexity: Complexity | None = None

    @model_validator(mode="after")
    def _bounds(self) -> Rule:
        if (self.max_complexity and self.min_complexity
                and COMPLEXITY_LEVELS.index(self.min_complexity) > COMPLEXITY_LEVELS.index(self.max_complexity)):
            raise ValueError("min_complexity is above max_complexity, so the rule never applies")
        return self

    def applies(self, level: str) -> bool:
        i = COMPLEXITY_LEVELS.index(level)
        if self.max_complexity is not None and i > COMPLEXITY_LEVELS.index(self.max_complexity):
            return False
        return not (self.min_complexity is not None and i < COMPLEXITY_LEVELS.index(self.min_complexity))


class CustomPolicy(_Strict):
    rules: list[Rule] = Field(min_length=1)


class ComplexitySettings(_Strict):
    medium_chars: int = Field(8000, gt=0)
    high_chars: int = Field(32000, gt=0)

    @model_validator(mode="after")
    def _order(self) -> ComplexitySettings:
        if self.high_chars <= self.medium_chars:
            raise ValueError("high_chars must be larger than medium_chars")
        return self

    def level(self, prompt_chars: int) -> str:
        if prompt_chars < self.medium_chars:
            return "low"
        return "medium" if prompt_chars < self.high_chars else "high"


class RoutingSettings(_Strict):
    policy: str = "local-first"
    policies: dict[str, CustomPolicy] = Field(default_factory=dict)
    tasks: dict[str, Selection] = Field(default_factory=dict)
    roles: dict[str, Selection] = Field(default_factory=dict)
    complexity: ComplexitySettings = Field(default_factory=lambda: ComplexitySettings())

    @field_validator("tasks")
    @classmethod
    def _task_names(cls, v: dict[str, Selection]) -> dict[str, Selection]:
        unknown = [t for t in v if t not in (*TASK_TYPES, "default")]
        if unknown:
            raise ValueError(f"unknown task type {unknown[0]!r}; use one of {', '.join(TASK_TYPES)} or default")
        return v

    @field_validator("policies")
    @classmethod
    def _no_shadowing(cls, v: dict[str, CustomPolicy]) -> dict[str, CustomPolicy]:
        clash = [n for n in v if n in BUILTIN_POLICIES]
        if clash:
            raise ValueError(f"custom policy {clash[0]!r} would shadow the built-in policy of that name")
        return v


class ModelConfig(_Strict):
    """The whole model config file."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: str | None = Field(None, alias="$schema")
    providers: dict[str, Provider] = Field(min_length=1)
    luallm: LuallmSettings = Field(default_factory=lambda: LuallmSettings())
    retry: RetrySettings = Field(default_factory=lambda: RetrySettings())
    routing: RoutingSettings = Field(default_factory=RoutingSettings)
    disable_repairs: tuple[str, ...] = ()

    @field_validator("providers", mode="before")
    @classmethod
    def _provider_table(cls, v: Any) -> Any:
        if isinstance(v, dict):
            if not v:
                raise ValueError("at least one provider is required")
            for name, p in v.items():
                if isinstance(p, dict) and p.get("kind", "openai") not in ("openai", "luallm"):
                    raise ValueError(f"{name}: kind must be 'openai' or 'luallm' (or omitted)")
        return v

    @model_validator(mode="after")
    def _references(self) -> ModelConfig:
        known = set(self.providers)
        policies = set(BUILTIN_POLICIES) | set(self.routing.policies)

        def check_provider(name: str, where: str) -> None:
            if name not in known:
                raise ValueError(f"{where}: unknown provider {name!r} (known: {', '.join(sorted(known))})")

        def check_policy(name: str, where: str) -> None:
            if name not in policies:
                raise ValueError(f"{where}: unknown policy {name!r} (known: {', '.join(sorted(policies))})")

        check_policy(self.routing.policy, "routing.policy")
        for pname, pol in self.routing.policies.items():
            for i, rule in enumerate(pol.rules):
                check_provider(rule.provider, f"routing.policies.{pname}.rules.{i}")
        for section, table in (("tasks", self.routing.tasks), ("roles", self.routing.roles)):
            for key, sel in table.items():
                where = f"routing.{section}.{key}"
                for name in [*sel.prefer, *sel.fallback]:
                    check_provider(name, where)
                if sel.policy is not None:
                    check_policy(sel.policy, where)
        return self


def parse_config(data: Any, source: str = "<config>") -> ModelConfig:
    """Validate already-decoded JSON; ConfigError with one line per problem, joined by '; '."""
    if not isinstance(data, dict):
        raise ConfigError(f"invalid model config {source}: the top level must be a JSON object", config_path=source)
    try:
        return ModelConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid model config {source}: {_summarize(exc)}", config_path=source) from None


def load_config(path: str | Path) -> ModelConfig:
    """Read and validate the JSON config file at `path`."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"model config {p} does not exist", config_path=str(p)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read model config {p}: {exc.strerror or exc}", config_path=str(p)) from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"model config {p} is not valid JSON: {exc}", config_path=str(p)) from None
    return parse_config(data, str(p))


def resolve_config_path(flag: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """`--config` if given, else $LUALLM_AGENT_CONFIG, else None."""
    if flag:
        return flag
    env = os.environ if environ is None else environ
    return env.get(CONFIG_ENV) or None


def _summarize(exc: ValidationError) -> str:
    """One line per pydantic error, without input values (they might be secrets)."""
    lines: list[str] = []
    for err in exc.errors(include_input=False, include_url=False):
        parts = [str(p) for p in err["loc"]]
        # Drop the provider union's tag: providers.<name>.openai.model → providers.<name>.model
        if len(parts) > 2 and parts[0] == "providers" and parts[2] in ("openai", "luallm"):
            del parts[2]
        loc = ".".join(parts)
        msg = err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field (check the spelling)"
        lines.append(f"{loc}: {msg}" if loc else msg)
    seen: list[str] = []
    for line in lines:
        if line not in seen:
            seen.append(line)
    return "; ".join(seen)
