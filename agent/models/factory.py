"""Building the one `ModelClient` a process uses from `ModelSettings`.

Order: recorded responses (`--replay`/`responses_path`: never the network) → model config file
(`--config` / $LUALLM_AGENT_CONFIG: routing across providers) → a single `--base-url` + `--model`
endpoint with retries → None (the runtime then answers `model_not_configured`). With
`record_path` every exchange is also appended to that file. Every call is audited as `model_call`.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import httpx

from agent.audit import AuditLog
from agent.errors import ModelNotConfigured
from agent.models.base import ModelClient, ModelSettings
from agent.models.config import OpenAIProvider, load_config, resolve_config_path
from agent.models.openai_http import OpenAIChatModel
from agent.models.recorded import RecordedModel
from agent.models.recorder import RecordingModel
from agent.models.retry import RetryingModel, RetryPolicy
from agent.models.routing import RoutingModel
from agent.models.usage import AuditedModel, UsageTracker
from agent.redact import Redactor

__all__ = ["build_model_client", "UsageTracker"]


def build_model_client(settings: ModelSettings, audit: AuditLog | None, redactor: Redactor, *,
                       environ: Mapping[str, str] | None = None, transport: httpx.BaseTransport | None = None,
                       sleep: Callable[[float], None] = time.sleep,
                       rand: Callable[[], float] = random.random) -> ModelClient | None:
    """The client for these settings, or None when no model is configured at all.

    Raises `ConfigError` (a `ModelNotConfigured`) for an invalid config file and
    `ModelNotConfigured` for a replay file that cannot be read.
    """
    env = os.environ if environ is None else environ
    client: ModelClient | None
    if settings.responses_path:
        try:
            client = RecordedModel(settings.responses_path, redactor)
        except (OSError, ValueError) as exc:
            raise ModelNotConfigured(f"cannot load recorded responses: {exc}",
                                     responses_path=settings.responses_path) from None
    elif config_path := resolve_config_path(settings.config_path, env):
        config = load_config(config_path)
        for provider in config.providers.values():
            # Keys named by api_key_env may not end in _KEY/_TOKEN; make sure they are scrubbed anyway.
            if isinstance(provider, OpenAIProvider) and provider.api_key_env and env.get(provider.api_key_env):
                redactor.add(env[provider.api_key_env])
        client = RoutingModel(config, audit, environ=env, transport=transport, sleep=sleep, rand=rand,
                              stall_s=settings.stall_s, max_response_bytes=settings.max_response_bytes)
    elif settings.base_url and settings.model:
        if settings.api_key:
            redactor.add(settings.api_key)
        http = OpenAIChatModel(settings.base_url, settings.model, settings.api_key, timeout_s=settings.timeout_s,
                               stall_s=settings.stall_s, max_response_bytes=settings.max_response_bytes,
                               transport=transport, audit=audit, probe=True)
        client = RetryingModel(http, RetryPolicy(), audit=audit, sleep=sleep, rand=rand)
    else:
        return None
    if audit is not None:
        client = AuditedModel(client, audit)
    if settings.record_path:
        if settings.responses_path and _same_file(settings.record_path, settings.responses_path):
            # Appending a replay to its own source would duplicate every line.
            raise ModelNotConfigured("--record and --replay name the same file", record_path=settings.record_path)
        client = RecordingModel(client, settings.record_path, redactor)
    return client


def _same_file(a: str, b: str) -> bool:
    return Path(a).resolve() == Path(b).resolve()
