"""Routing across configured providers: pick candidates, skip unsuitable ones, fall back on failure.

For each request:

1. Candidates come from the config (`agent.models.config`): `routing.roles[role]`, else
   `routing.tasks[task_type]`, else `routing.tasks.default`, else `routing.policy`. Built-in policies
   are `local-first` / `cloud-first` (every provider, ordered by locality, config order within);
   custom policies keep the rules that fit the prompt's estimated complexity, by priority.
2. A candidate whose notes (luallm notes, or `notes` in the config; convention in
   `agent.models.notes`) flag it unsuitable for this request is skipped (`model_skip` audited).
3. A luallm model is looked up fresh in `luallm status --json` and probed on `/health`. Stopped and
   auto_start off → this candidate fails with `model_not_running` (its start command recorded).
4. The request goes to the candidate through `RetryingModel(OpenAIChatModel)`. On failure the next
   candidate is tried and `model_fallback` audited. When a luallm model's failure comes with status
   or health showing it dead, it is treated as a crash (likely out of memory) and a note is suggested
   on stderr: `luallm notes add <model> "max_prompt_tokens: N ..."` — never written by us.
5. Nothing left → `NoModelAvailable` naming every model tried (`tried: [...]`), or
   `ModelNotRunning` when the only obstacle was that no candidate was running.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from agent.audit import AuditLog
from agent.errors import DeadlineExceeded, ModelError, ModelNotConfigured, ModelNotRunning, NoModelAvailable
from agent.models.base import (
    UNKNOWN_CAPABILITIES,
    Capabilities,
    ModelClient,
    ModelReply,
    ModelRequest,
    capabilities_of,
)
from agent.models.config import LuallmProvider, ModelConfig, OpenAIProvider
from agent.models.limits import DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_STALL_S
from agent.models.luallm import LuallmCLI, ModelDead
from agent.models.notes import NoteFlags, estimate_tokens, parse_note
from agent.models.openai_http import OpenAIChatModel
from agent.models.retry import RetryingModel, RetryPolicy

__all__ = ["RoutingModel", "candidate_order", "estimate_complexity"]


def estimate_complexity(request: ModelRequest, config: ModelConfig) -> str:
    """low | medium | high, from the prompt's length in characters (thresholds in the config)."""
    chars = sum(len(m.get("content", "")) for m in request.messages)
    return config.routing.complexity.level(chars)


def candidate_order(config: ModelConfig, request: ModelRequest) -> list[str]:
    """Provider names to try for `request`, best first, without duplicates."""
    routing = config.routing
    selection = routing.roles.get(request.role) if request.role else None
    if selection is None:
        selection = routing.tasks.get(request.task_type) or routing.tasks.get("default")
    if selection is not None and selection.policy is None:
        return _dedupe([*selection.prefer, *selection.fallback])
    policy = selection.policy if selection is not None and selection.policy else routing.policy
    return _policy_order(config, policy, estimate_complexity(request, config))


def _policy_order(config: ModelConfig, policy: str, level: str) -> list[str]:
    names = list(config.providers)
    if policy in ("local-first", "cloud-first"):
        local = [n for n in names if config.providers[n].is_local]
        cloud = [n for n in names if not config.providers[n].is_local]
        return local + cloud if policy == "local-first" else cloud + local
    rules = [r for r in config.routing.policies[policy].rules if r.applies(level)]
    return _dedupe([r.provider for r in sorted(rules, key=lambda r: r.priority)])


def _dedupe(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


class RoutingModel:
    """A `ModelClient` that serves each request from the first suitable, working provider."""

    def __init__(self, config: ModelConfig, audit: AuditLog | None = None, *,
                 environ: Mapping[str, str] | None = None, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep, rand: Callable[[], float] = random.random,
                 clock: Callable[[], float] = time.time, stall_s: float = DEFAULT_STALL_S,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES, probe: bool = True) -> None:
        self.config = config
        self.audit = audit
        self.stall_s = stall_s  # for providers that set no `stall_s`
        self.max_response_bytes = max_response_bytes
        self._probe = probe
        self._environ = os.environ if environ is None else environ
        self._transport = transport
        self._sleep = sleep
        self._rand = rand
        self._clock = clock
        self._policy = RetryPolicy(config.retry.attempts, config.retry.base_s, config.retry.cap_s)
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, int | None], ModelClient] = {}
        self._luallm: dict[str, LuallmCLI] = {}
        self._suggested: set[str] = set()

    # -- ModelClient --------------------------------------------------------------------------

    def complete(self, request: ModelRequest) -> ModelReply:
        order = candidate_order(self.config, request)
        self._audit("model_route", task_type=request.task_type, role=request.role, candidates=order,
                    complexity=estimate_complexity(request, self.config), digest=request.digest())
        if not order:
            raise NoModelAvailable(f"no provider is configured for task type {request.task_type!r}"
                                   f"{f' / role {request.role!r}' if request.role else ''}; check routing "
                                   "in the model config", task_type=request.task_type, tried=[])
        notes: dict[str, dict[str, str | None]] = {}  # per binary, fetched at most once per request
        tried: list[dict[str, Any]] = []
        for i, name in enumerate(order):
            if request.deadline is not None and self._clock() >= request.deadline:
                raise DeadlineExceeded(f"deadline passed while choosing a model for {request.task_type!r}",
                                       tried=tried)
            provider = self.config.providers[name]
            entry: dict[str, Any] = {"provider": name, "model": provider.label}
            reason = self._flags(name, provider, notes).rejects(request)
            if reason:
                self._audit("model_skip", provider=name, model=provider.label, reason=reason,
                            task_type=request.task_type)
                tried.append({**entry, "outcome": "skipped", "reason": reason})
                continue
            next_name = order[i + 1] if i + 1 < len(order) else None
            try:
                client = self._client(name, provider, request)
            except ModelError as exc:  # not running, dead, luallm failing, key missing
                tried.append(self._failed(name, provider, request, exc, entry, next_name, sent=False))
                continue
            try:
                reply = client.complete(request)
            except ModelError as exc:
                tried.append(self._failed(name, provider, request, exc, entry, next_name, sent=True))
                continue
            reply.provider = name
            return reply
        raise self._exhausted(request, tried)

    def capabilities(self, request: ModelRequest | None = None) -> Capabilities:
        """What the provider that would serve `request` (default: a planning request) supports.

        That is the first candidate whose client exists or can be made without starting anything:
        an OpenAI endpoint, or a luallm model that is already running. Notes are not consulted
        (they depend on the prompt). Nothing suitable → `UNKNOWN_CAPABILITIES`.
        """
        probe_request = request or ModelRequest(messages=[], task_type="planning")
        for name in candidate_order(self.config, probe_request):
            provider = self.config.providers[name]
            try:
                if isinstance(provider, LuallmProvider) and not self._ready(provider):
                    continue
                client = self._client(name, provider, probe_request)
            except ModelError:
                continue
            return capabilities_of(client, request) or UNKNOWN_CAPABILITIES
        return UNKNOWN_CAPABILITIES

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
            clis, self._luallm = list(self._luallm.values()), {}
        for c in clients:
            c.close()
        for cli in clis:
            cli.close()  # stops models we started, when auto_stop is on

    # -- candidates ---------------------------------------------------------------------------

    def _ready(self, provider: LuallmProvider) -> bool:
        """Is this luallm model running and healthy right now (so asking it starts and waits for nothing)?"""
        cli = self.luallm_cli(provider.binary)
        server = cli.status().server(provider.luallm_model)
        return bool(server and server.running and server.port is not None and cli.health(server.port) == "ok")

    def luallm_cli(self, binary: str | None = None) -> LuallmCLI:
        """The (shared) wrapper for a luallm binary, configured from `luallm` settings."""
        s = self.config.luallm
        binary = binary or s.binary
        with self._lock:
            cli = self._luallm.get(binary)
            if cli is None:
                cli = LuallmCLI(binary, audit=self.audit, command_timeout_s=s.command_timeout_s,
                                auto_start=s.auto_start, auto_stop=s.auto_stop, ready_timeout_s=s.ready_timeout_s,
                                health_timeout_s=s.health_timeout_s, transport=self._transport,
                                sleep=self._sleep, clock=self._clock)
                self._luallm[binary] = cli
        return cli

    def _flags(self, name: str, provider: OpenAIProvider | LuallmProvider,
               notes: dict[str, dict[str, str | None]]) -> NoteFlags:
        flags = parse_note(provider.notes)
        if isinstance(provider, LuallmProvider):
            cli = self.luallm_cli(provider.binary)
            if cli.binary not in notes:
                try:
                    notes[cli.binary] = {k: v.content for k, v in cli.notes().items()}
                except ModelError as exc:
                    # No notes is not fatal; the status call that follows will say what is wrong.
                    self._audit("luallm_notes_unavailable", binary=cli.binary, error=exc.message)
                    notes[cli.binary] = {}
            flags = flags.merge(parse_note(notes[cli.binary].get(provider.luallm_model)))
        return flags

    def _client(self, name: str, provider: OpenAIProvider | LuallmProvider, request: ModelRequest) -> ModelClient:
        if isinstance(provider, LuallmProvider):
            server = self.luallm_cli(provider.binary).ensure_ready(provider.luallm_model, deadline=request.deadline)
            key: tuple[str, int | None] = (name, server.port)
            base_url, model, api_key = f"http://127.0.0.1:{server.port}/v1", provider.luallm_model, None
        else:
            key = (name, None)
            base_url, model, api_key = provider.base_url, provider.model, self._api_key(name, provider)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                http = OpenAIChatModel(base_url, model, api_key, timeout_s=provider.timeout_s,
                                       stall_s=provider.stall_s or self.stall_s,
                                       max_response_bytes=self.max_response_bytes, transport=self._transport,
                                       supports_json_schema=provider.supports_json_schema,
                                       streaming=provider.streaming, probe=self._probe, audit=self.audit,
                                       provider=name, clock=self._clock)
                client = RetryingModel(http, self._policy, audit=self.audit, sleep=self._sleep, rand=self._rand,
                                       clock=self._clock)
                self._clients[key] = client
        return client

    def _api_key(self, name: str, provider: OpenAIProvider) -> str | None:
        if provider.api_key_env is None:
            return None
        value = self._environ.get(provider.api_key_env)
        if not value:
            raise ModelNotConfigured(f"provider {name!r} needs an API key in ${provider.api_key_env}, which is "
                                     "not set", provider=name, api_key_env=provider.api_key_env)
        return value

    # -- failures -----------------------------------------------------------------------------

    def _failed(self, name: str, provider: OpenAIProvider | LuallmProvider, request: ModelRequest,
                exc: ModelError, entry: dict[str, Any], next_name: str | None, *, sent: bool) -> dict[str, Any]:
        """Classify a candidate's failure, audit the fallback, and return its `tried` entry.

        Only a failure of a request actually sent to a luallm model prompts the crash diagnosis:
        that is the case where our prompt may have killed it.
        """
        if isinstance(exc, ModelNotRunning):
            entry.update(outcome="not_running", start_command=exc.details.get("start_command"))
        elif isinstance(exc, ModelDead):
            entry.update(outcome="dead", error=exc.message)
        else:
            crash = self._crash(provider) if sent and isinstance(provider, LuallmProvider) else None
            entry.update(outcome="crashed" if crash else "failed", error=exc.message)
            if crash:
                entry["diagnosis"] = crash
        entry["code"] = exc.code
        self._audit("model_fallback", provider=name, model=provider.label, reason=entry["outcome"],
                    error=exc.code, message=exc.message, next=next_name, task_type=request.task_type,
                    **({"diagnosis": entry["diagnosis"]} if "diagnosis" in entry else {}))
        if entry["outcome"] == "crashed" and isinstance(provider, LuallmProvider):
            self._suggest_crash_note(provider, request)
        return entry

    def _crash(self, provider: LuallmProvider) -> dict[str, Any] | None:
        """After an HTTP failure: does status/health show the model dead? (None = alive or unknown.)"""
        try:
            return self.luallm_cli(provider.binary).diagnose(provider.luallm_model)
        except ModelError:
            return None

    def _suggest_crash_note(self, provider: LuallmProvider, request: ModelRequest) -> None:
        model = provider.luallm_model
        if model in self._suggested:
            return
        self._suggested.add(model)
        tokens = estimate_tokens(request)
        ceiling = max(256, int(tokens * 0.9) // 100 * 100)
        self._audit("model_oom", model=model, prompt_tokens_est=tokens, task_type=request.task_type)
        self.luallm_cli(provider.binary).suggest_note(
            model, f"max_prompt_tokens: {ceiling} (crashed, likely out of memory, on a ~{tokens}-token "
                   f"{request.task_type} prompt)")

    def _exhausted(self, request: ModelRequest, tried: list[dict[str, Any]]) -> ModelError:
        summary = ", ".join(f"{t['provider']} ({t['model']}): {t['outcome']}" for t in tried)
        considered = [t for t in tried if t["outcome"] != "skipped"]
        if considered and all(t["outcome"] == "not_running" for t in considered):
            first = considered[0]["start_command"]
            return ModelNotRunning(f"no model for {request.task_type!r} is running; start one, e.g.: {first} "
                                   f"(tried {summary})", start_command=first, tried=tried,
                                   task_type=request.task_type)
        return NoModelAvailable(f"no model could serve the {request.task_type!r} request; tried {summary}",
                                tried=tried, task_type=request.task_type)

    def _audit(self, event: str, **fields: Any) -> None:
        if self.audit is not None:
            self.audit.record(event, **fields)
