"""Which server answers at an OpenAI-compatible endpoint, and what it can enforce: once per process.

Answer forms depend on it (`agent.answering.loop`): a GBNF grammar only where the server applies one, a
JSON-Schema `response_format` where it is enforced. Two or three small GETs decide, and nothing is
ever generated:

1. `GET {root}/props` with `default_generation_settings` or `build_info` → **llama.cpp**
   (streaming, `response_format` json_schema, `grammar`).
2. `GET {base_url}/models`: `owned_by: "llamacpp"` → llama.cpp; `owned_by: "vllm"` → **vLLM**
   (streaming, json_schema; its `guided_grammar` takes another EBNF dialect, so grammar: no).
3. `GET {root}/api/version` answering `{"version": ...}` → **Ollama** (streaming, json_schema).
4. `owned_by` of `openai`, `system` or `openai-internal` → **OpenAI** (streaming, json_schema).
5. Anything else → "unknown": streaming, json_schema as configured, no grammar.

`{root}` is the base URL without its trailing `/v1`. Unreachable or odd answers count as "no". The
result is cached per (base URL, model) for the life of the process; what a server later refuses is
tracked by the client itself (`OpenAIChatModel.capabilities`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from agent.models.base import Capabilities

if TYPE_CHECKING:
    from agent.models.openai_http import OpenAIChatModel

__all__ = ["probe_capabilities", "clear_capabilities_cache", "LLAMA_CPP", "VLLM", "OLLAMA", "OPENAI"]

LLAMA_CPP = Capabilities(streaming=True, json_schema=True, grammar=True, server="llama.cpp", prefill=True)
VLLM = Capabilities(streaming=True, json_schema=True, grammar=False, server="vllm")
OLLAMA = Capabilities(streaming=True, json_schema=True, grammar=False, server="ollama")
OPENAI = Capabilities(streaming=True, json_schema=True, grammar=False, server="openai")
_OPENAI_OWNERS = frozenset({"openai", "system", "openai-internal"})

_cache: dict[tuple[str, str], Capabilities] = {}
_lock = threading.Lock()


def clear_capabilities_cache() -> None:
    """Forget every probe result (tests; a process never needs to)."""
    with _lock:
        _cache.clear()


def probe_capabilities(client: OpenAIChatModel) -> Capabilities:
    """The capabilities of `client`'s server, probed on the first call for its endpoint and model."""
    key = (client.base_url, client.model)
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    found = _probe(client)
    with _lock:
        return _cache.setdefault(key, found)


def _probe(client: OpenAIChatModel) -> Capabilities:
    root = client.base_url.removesuffix("/v1")
    status, props = client.get_json(f"{root}/props")
    if status == 200 and isinstance(props, dict) and ("default_generation_settings" in props or "build_info" in props):
        return LLAMA_CPP
    status, listing = client.get_json(f"{client.base_url}/models")
    owners = _owners(listing) if status == 200 else set()
    if "llamacpp" in owners:
        return LLAMA_CPP
    if "vllm" in owners:
        return VLLM
    if not owners & _OPENAI_OWNERS:
        status, version = client.get_json(f"{root}/api/version")
        if status == 200 and isinstance(version, dict) and isinstance(version.get("version"), str):
            return OLLAMA
    if owners & _OPENAI_OWNERS:
        return OPENAI
    return Capabilities(streaming=True, json_schema=client.supports_json_schema, grammar=False, server="unknown")


def _owners(listing: Any) -> set[str]:
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        return set()
    return {str(m["owned_by"]).lower() for m in data if isinstance(m, dict) and isinstance(m.get("owned_by"), str)}
