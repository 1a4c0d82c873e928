"""Which form the model answers in: a Lua plan, a JSON answer, or a grammar-constrained Lua plan.

`--answers plan|json` fix the form. `--answers auto` (the default) decides per model and task
type, once per process (the inputs do not change while it runs):

1. a hint for the model: `answers` of its provider in the model config, or an `answers: <form>`
   line in its notes (luallm notes or the config's `notes`); `avoid: json` / `avoid: plan` /
   `avoid: grammar` (or `unsuitable:`) rule a form out;
2. a grammar-constrained Lua plan only when that hint asks for `grammar` and the server takes a
   GBNF grammar (the capability probe; grammar from `agent.plans.grammar`, when installed); never
   chosen by the probe alone; otherwise
3. the JSON answer, with the role's schema as `response_format` unless the server is known not
   to take one (then the plain JSON answer, guided by the worked example).

Small models write valid JSON far more often than valid Lua, and a schema or grammar the server
enforces removes the shape errors altogether. The builder answers none of these: its files come as
text (`builder_text_form`).
"""

from __future__ import annotations

import importlib
import re
import shutil
import threading
from dataclasses import dataclass
from typing import Any

from agent.models.base import ModelClient

__all__ = ["AnswerForm", "FORMS", "choose_form", "builder_text_form", "capabilities_of", "model_hints", "ModelHints",
           "grammar_for", "json_form"]

FORMS = ("text", "lua", "plan", "json", "grammar")
_ANSWERS_LINE = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*)?\s*answers\s*(?:\*\*)?\s*:\s*(?:\*\*)?\s*`?(\w+)", re.I | re.M)
_WRAPPED = ("client", "inner")  # attribute names of the model layer's wrappers (UsageTracker, Audited…)
_lock = threading.Lock()
_caps_cache: dict[int, tuple[object, Any]] = {}
_hints_cache: dict[tuple[int, str, str], tuple[object, ModelHints]] = {}


@dataclass(frozen=True)
class AnswerForm:
    """One way of answering: `name` plan|json|grammar, whether the schema goes as response_format,
    the GBNF grammar (grammar form only), and why it was chosen (audited)."""

    name: str
    schema: bool = False
    grammar: str | None = None
    reason: str = ""

    @property
    def lua(self) -> bool:
        return self.name in ("plan", "grammar")


@dataclass(frozen=True)
class ModelHints:
    """What the config and notes say about the model that will serve a role."""

    model: str | None = None
    answers: str | None = None
    avoid: frozenset[str] = frozenset()
    json_schema: bool | None = None  # False when the config says the server takes no response_format


def json_form(reason: str, schema: bool = True) -> AnswerForm:
    return AnswerForm("json", schema=schema, reason=reason)


def _layers(client: Any) -> list[Any]:
    """The client and every client it wraps, outermost first."""
    out: list[Any] = []
    while client is not None and len(out) < 10 and all(client is not o for o in out):
        out.append(client)
        client = next((getattr(client, a) for a in _WRAPPED if getattr(client, a, None) is not None), None)
    return out


def capabilities_of(client: ModelClient | None) -> Any | None:
    """The model layer's `Capabilities` (streaming, json_schema, grammar, server) or None when unknown.

    Probed at most once per underlying client and process (the innermost layer that can tell: the
    per-command wrappers come and go); a failing probe counts as unknown.
    """
    for layer in reversed(_layers(client)):
        probe = getattr(layer, "capabilities", None)
        if not callable(probe):
            continue
        with _lock:
            hit = _caps_cache.get(id(layer))
            if hit is not None and hit[0] is layer:
                return hit[1]
        try:
            caps = probe()
        except Exception:  # a probe is an optimisation: unknown is a valid answer
            caps = None
        with _lock:
            _caps_cache[id(layer)] = (layer, caps)  # the layer is kept alive, so its id stays unique
        return caps
    return None


def _note_hints(text: str | None) -> tuple[str | None, frozenset[str]]:
    if not text:
        return None, frozenset()
    from agent.models.notes import parse_note

    m = _ANSWERS_LINE.search(text)
    answers = m.group(1).lower() if m and m.group(1).lower() in FORMS else None
    avoid = parse_note(text).unsuitable & {"json", "plan", "lua", "grammar"}
    return answers, frozenset("plan" if a == "lua" else a for a in avoid)


def _merge(model: str | None, parts: list[tuple[str | None, frozenset[str]]],
           json_schema: bool | None = None) -> ModelHints:
    answers = next((a for a, _ in parts if a), None)
    avoid: frozenset[str] = frozenset().union(*(v for _, v in parts)) if parts else frozenset()
    return ModelHints(model, answers, avoid, json_schema)


def _luallm_note(cli: Any, model: str) -> str | None:
    try:
        note = cli.notes().get(model)
    except Exception:  # no luallm, or it failed: no notes is not an error
        return None
    return getattr(note, "content", None)


def _routing_hints(router: Any, role: str, task_type: str) -> ModelHints:
    from agent.models.base import ModelRequest
    from agent.models.config import LuallmProvider
    from agent.models.routing import candidate_order

    order = candidate_order(router.config, ModelRequest(messages=[], task_type=task_type, role=role))
    if not order:
        return ModelHints()
    provider = router.config.providers[order[0]]
    parts = [(getattr(provider, "answers", None) if getattr(provider, "answers", "auto") in FORMS else None,
              frozenset()), _note_hints(provider.notes)]
    if isinstance(provider, LuallmProvider):
        parts.append(_note_hints(_luallm_note(router.luallm_cli(provider.binary), provider.luallm_model)))
    return _merge(provider.label, parts, False if provider.supports_json_schema is False else None)


def _endpoint_hints(http: Any) -> ModelHints:
    model = str(getattr(http, "model", "") or "")
    parts: list[tuple[str | None, frozenset[str]]] = []
    if model and shutil.which("luallm"):
        from agent.models.luallm import LuallmCLI

        parts.append(_note_hints(_luallm_note(LuallmCLI("luallm", command_timeout_s=5.0), model)))
    return _merge(model or None, parts)


def model_hints(client: ModelClient | None, role: str, task_type: str) -> ModelHints:
    """Hints for the model that will first be asked for this role and task type (cached per process)."""
    source = next((layer for layer in _layers(client)
                   if (hasattr(layer, "config") and hasattr(layer, "luallm_cli"))
                   or (hasattr(layer, "model") and hasattr(layer, "url"))), None)
    if source is None:
        return ModelHints()
    key = (id(source), role, task_type)  # the shared client, not the per-command wrapper
    with _lock:
        hit = _hints_cache.get(key)
        if hit is not None and hit[0] is source:
            return hit[1]
    hints = _routing_hints(source, role, task_type) if hasattr(source, "luallm_cli") else _endpoint_hints(source)
    with _lock:
        _hints_cache[key] = (source, hints)
    return hints


def grammar_for(role: str) -> str | None:
    """The GBNF grammar of the role's Lua plan subset, when the generator is installed."""
    try:
        module = importlib.import_module("agent.plans.grammar")
    except ImportError:
        return None
    make = getattr(module, "plan_grammar", None)
    if not callable(make):
        return None
    from agent.plans.tools import plan_tools_for

    try:
        grammar = make(role, plan_tools_for(role))
    except Exception:  # a generator bug must not stop the agent: fall back to JSON
        return None
    return grammar if isinstance(grammar, str) and grammar.strip() else None


_LUA_FORMS = ("lua", "plan", "grammar")


def builder_text_form(setting: str, client: ModelClient | None) -> str:
    """The text form of the builder's rounds (`builder_rounds.py`), which it always works in: code
    escaped into JSON strings or squeezed through a plan grammar is worse code (so Aider found on
    frontier models; docs/real-model.md has ours). "lua" (files as Lua long strings, read, not run)
    where `--answers lua|plan|grammar`, or under `auto` a provider's or note's form, asks for Lua;
    else "fenced" (`agent/answering/file_forms.py`)."""
    if setting != "auto":
        return "lua" if setting in _LUA_FORMS else "fenced"
    return "lua" if model_hints(client, "builder", "planning").answers in _LUA_FORMS else "fenced"


def choose_form(setting: str, client: ModelClient | None, role: str, task_type: str) -> AnswerForm:
    """The form for the first request of a command (`setting` is --answers: auto|plan|grammar|json;
    `text` and `lua`, the builder's, are `auto` here)."""
    if setting == "plan":
        return AnswerForm("plan", reason="--answers plan")
    if setting == "grammar":
        grammar = grammar_for(role) if getattr(capabilities_of(client), "grammar", False) else None
        if grammar:
            return AnswerForm("grammar", grammar=grammar, reason="--answers grammar: the server takes a GBNF grammar")
        return AnswerForm("plan", reason="--answers grammar: the server takes no GBNF grammar; a free Lua plan")
    if setting == "json":
        return json_form("--answers json", schema=getattr(capabilities_of(client), "json_schema", None) is not False)
    hints = model_hints(client, role, task_type)
    caps = capabilities_of(client)
    takes_grammar = bool(getattr(caps, "grammar", False))
    takes_schema = getattr(caps, "json_schema", None)
    if takes_schema is None:
        takes_schema = hints.json_schema
    who = f"model {hints.model}" if hints.model else "the model"
    if hints.answers == "plan":
        return AnswerForm("plan", reason=f"{who}: hint answers=plan")
    if hints.answers == "json":
        return json_form(f"{who}: hint answers=json", schema=takes_schema is not False)
    # The constrained Lua plan is opt-in (a provider's `answers: grammar` or a luallm note): small
    # models under the grammar can loop inside a long string to their token limit, while the JSON
    # answer held by its schema stays valid (docs/real-model.md).
    wants_grammar = hints.answers == "grammar"
    if wants_grammar and takes_grammar and not hints.avoid & {"grammar", "plan"}:
        grammar = grammar_for(role)
        if grammar:
            return AnswerForm("grammar", grammar=grammar, reason=f"{who}: the server takes a GBNF grammar")
    if "json" in hints.avoid:
        return AnswerForm("plan", reason=f"{who}: notes say avoid json")
    if takes_schema is False:
        return json_form(f"{who}: the server takes no response_format; plain JSON with the worked example",
                         schema=False)
    known = "the server takes response_format" if takes_schema else "server capabilities unknown"
    return json_form(f"{who}: JSON answer with the schema as response_format ({known})")
