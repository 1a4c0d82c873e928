"""Which model answers a supervised task's LLM calls (seed 000 §10, with luallm's real CLI).

`pick(task_type)` reads `luallm status --json` and `luallm notes --json` fresh, walks
`model_selection[task_type]` (else `default`) prefer → fallback, skips models whose notes flag
them unsuitable, and returns the first running one. With no selection configured the first
running luallm model is used. Nothing running: with `luallm.auto_start` the first installed
candidate is started (`model_start`); without it `ModelNotRunning` carries the exact
`luallm start …` command and the task pauses in MODEL_WAIT. A model that dies during a call is
logged `model_oom`, a note is *suggested* (never written), and the next candidate is tried
(`model_fallback`). `--scripted-replies` replaces only the completion transport: selection still
runs against luallm, which is what lets the tests exercise MODEL_WAIT.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from typing import Any

from agent.errors import ModelError, ModelNotConfigured, ModelNotRunning, ModelTimeout, NoModelAvailable
from agent.models.base import ModelClient, ModelReply, ModelRequest
from agent.models.luallm import LuallmCLI, start_command
from agent.models.notes import parse_note
from agent.models.retry import RetryingModel, RetryPolicy
from agent.supervised.events import TaskAudit
from agent.supervised.home import HomeConfig

__all__ = ["ModelPicker"]


class ModelPicker:
    def __init__(self, config: HomeConfig, audit: TaskAudit, *, scripted: ModelClient | None = None) -> None:
        self.config = config
        self.audit = audit
        self.scripted = scripted
        self.excluded: set[str] = set()  # crashed during this process
        self.failures: dict[str, str] = {}  # model -> what happened to it, latest first-hand account
        self._failed_now: set[str] = set()  # candidates that failed the call in progress
        self._routing: ModelClient | None = None
        self._cli: LuallmCLI | None = None
        self.replies: list[dict[str, Any]] = []  # this step's model replies, for actions.jsonl

    @property
    def uses_luallm(self) -> bool:
        return bool(self.config.section("model_selection")) or "providers" not in self.config.raw

    def cli(self) -> LuallmCLI:
        if self._cli is None:
            binary = self.config.luallm_binary
            if shutil.which(binary) is None:
                raise ModelNotConfigured(f"luallm binary {binary!r} not found: `run` refuses to start without it "
                                         "(install luallm, set luallm.binary in config.json, or configure "
                                         "providers)", binary=binary)
            lu = self.config.section("luallm")
            self._cli = LuallmCLI(binary, audit=self.audit, auto_start=self.config.auto_start,
                                  auto_stop=bool(lu.get("auto_stop", False)),
                                  command_timeout_s=float(lu.get("command_timeout_s", 15.0)),
                                  ready_timeout_s=float(self.config.limit("model_start_timeout_seconds")))
        return self._cli

    def preflight(self) -> None:
        """What must hold before a task exists: the luallm binary and the commands `run` relies on
        (`help --json`, asked once per process and cached)."""
        if self.uses_luallm:
            self.cli().require_commands()

    def tried(self) -> list[dict[str, str]]:
        """The models that failed this run, with what happened to each (for the task's record)."""
        return [{"model": m, "error": e} for m, e in self.failures.items()]

    def _all_failed(self, task_type: str, candidates: list[str]) -> NoModelAvailable:
        shown = ", ".join(f"{m} ({self.failures[m]})" for m in self.failures) or "none"
        return NoModelAvailable(f"every candidate failed: {shown}", tried=list(self.failures), task_type=task_type,
                                candidates=candidates, every_candidate_failed=True)

    def _set_aside(self, model: str) -> bool:
        return model in self.excluded or model in self._failed_now

    def check_running(self, model: str) -> bool:
        status = self.cli().status().server(model)
        return status is not None and status.running

    def pick(self, task_type: str, override: str | None = None) -> tuple[str, int | None]:
        """(model, port) to use now; ModelNotRunning / NoModelAvailable otherwise."""
        cli = self.cli()
        status = cli.status()
        configured = [override] if override else self.config.selection(task_type)
        candidates = [c for c in configured if not self._set_aside(c)]
        if configured and not candidates:
            raise self._all_failed(task_type, configured)
        try:
            notes = cli.notes()
        except ModelError:
            notes = {}

        def flagged(name: str) -> bool:
            note = notes.get(name)
            return bool(parse_note(note.content if note else None).unsuitable & {task_type, "all", "*"})

        if not configured:
            running = [s for s in status.servers if s.running and not self._set_aside(s.model)
                       and not flagged(s.model)]
            if running:
                self.audit.record("model_selected", model=running[0].model, task_type=task_type, running=True,
                                  reason="no model_selection: first running luallm model")
                return running[0].model, running[0].port
            everything = [m.name for m in cli.list_models()]
            installed = [m for m in everything if not self._set_aside(m)]
            if not installed:
                if self.failures:
                    raise self._all_failed(task_type, everything)
                raise NoModelAvailable("luallm has no installed model; install one, then `luallm start MODEL`",
                                       tried=[])
            candidates = installed[:1]
        usable: list[str] = []
        for name in candidates:
            if flagged(name):
                self.audit.record("model_skip", model=name, task_type=task_type, reason="flagged in luallm notes")
                continue
            usable.append(name)
        for name in usable:
            server = status.server(name)
            if server is not None and server.running:
                self.audit.record("model_selected", model=name, task_type=task_type, running=True)
                return name, server.port
        if not usable:
            if self.failures:
                raise self._all_failed(task_type, candidates)
            raise NoModelAvailable(f"no viable model for task type {task_type!r}: every candidate is flagged "
                                   f"unsuitable in luallm notes ({', '.join(candidates) or 'none'}); check "
                                   f"`{self.config.luallm_binary} notes`", tried=candidates)
        if self.config.auto_start:
            for name in usable:
                try:
                    started = cli.ensure_ready(name)
                except ModelNotRunning:
                    raise
                except ModelError as exc:
                    self._fail(name, task_type, f"did not start: {exc.message}")
                    continue
                self.audit.record("model_selected", model=name, task_type=task_type, started=True)
                return name, started.port
            raise self._all_failed(task_type, candidates)
        model = usable[0]
        cmd = start_command(model, self.config.luallm_binary)
        self.audit.record("model_not_running", model=model, task_type=task_type, start_command=cmd)
        raise ModelNotRunning(f"model {model!r} is not running (auto_start is off); start it with: {cmd}",
                              model=model, start_command=cmd, task_type=task_type)

    def _client_for(self, model: str, port: int | None) -> ModelClient:
        if self.scripted is not None:
            return self.scripted
        if port is None:
            raise NoModelAvailable(f"luallm reports no port for {model!r}", tried=[model])
        from agent.models.openai_http import OpenAIChatModel

        # The retry policy every other model call has (transient HTTP failures, a silent model once):
        # a 503 while a model loads is waited out, not taken for a dead model.
        http = OpenAIChatModel(f"http://127.0.0.1:{port}/v1", model,
                               timeout_s=float(self.config.limit("llm_timeout_seconds")), audit=self.audit)
        return RetryingModel(http, self._retry_policy(), audit=self.audit)

    def _retry_policy(self) -> RetryPolicy:
        """The home's `retry` section, else its `llm_backoff_*` limits, as the one transport retry policy."""
        base = float(self.config.limit("llm_backoff_base_seconds"))
        cap = float(self.config.limit("llm_backoff_max_seconds"))
        retry = self.config.raw.get("retry")
        if not isinstance(retry, dict):
            return RetryPolicy(base_s=base, cap_s=cap)
        from agent.models.config import RetrySettings

        settings = RetrySettings.model_validate(retry)  # the home's config was checked against it at load
        return RetryPolicy(settings.attempts, settings.base_s, settings.cap_s)

    def _routing_client(self) -> ModelClient:
        if self._routing is None:
            from agent.models.config import parse_config
            from agent.models.routing import RoutingModel

            raw = self.config.raw
            cfg = parse_config({k: raw[k] for k in ("providers", "routing", "retry", "luallm") if k in raw})
            self._routing = RoutingModel(cfg, self.audit)
        return self._routing

    def complete(self, prompt: str, task_type: str, *, override: str | None = None,
                 max_tokens: int | None = None) -> ModelReply:
        """One completion; a model that dies is excluded and the next candidate tried."""
        request = ModelRequest(messages=[{"role": "user", "content": prompt}], task_type="planning"
                               if task_type == "planning" else "nested", max_tokens=max_tokens)
        self._failed_now = set()
        while True:
            port: int | None = None
            if self.uses_luallm:
                model, port = self.pick(task_type, override)
                client = self._client_for(model, port)
            else:
                model, client = "routing", (self.scripted or self._routing_client())
            digest = hashlib.sha256(prompt.encode()).hexdigest()
            self.audit.record("llm_call", model=model, task_type=task_type, prompt_sha256=digest,
                              prompt_tokens_est=len(prompt) // 4)
            t0 = time.perf_counter()
            try:
                reply = client.complete(request)
            except ModelError as exc:
                if not self.uses_luallm:
                    raise
                self._fail(model, task_type, self._what_happened(model, port, exc, prompt))
                continue
            self.audit.record("llm_response", model=model, response_sha256=hashlib.sha256(reply.text.encode())
                              .hexdigest(), tokens_in=reply.usage.prompt_tokens,
                              tokens_out=reply.usage.completion_tokens,
                              latency_ms=round((time.perf_counter() - t0) * 1000, 1))
            self.replies.append({"model": model, "task_type": task_type, "text": reply.text[:65536]})
            return reply

    def _fail(self, model: str, task_type: str, what: str) -> None:
        self.failures[model] = what
        self._failed_now.add(model)
        self.audit.record("model_fallback", model=model, task_type=task_type, reason=what)

    def _what_happened(self, model: str, port: int | None, exc: ModelError, prompt: str) -> str:
        """One short phrase for the failure; a model whose process is gone is a crash (`model_oom`)."""
        try:
            why: dict[str, Any] | None = self.cli().diagnose(model)
        except ModelError:
            why = None
        if why is not None and why.get("state") != "running":
            self.excluded.add(model)
            tokens = len(prompt) // 4
            self.audit.record("model_oom", model=model, context_tokens_est=tokens, error=exc.message, **why)
            self.cli().suggest_note(model, f"max_prompt_tokens: {max(256, int(tokens * 0.9))} (crashed at ~{tokens})")
            code = f", exit code {why['exit_code']}" if why.get("exit_code") is not None else ""
            return f"crashed: luallm reports it {why.get('state')}{code}"
        where = f"127.0.0.1:{port}" if port is not None else "its endpoint"
        details = exc.details
        if details.get("reason") == "connect_error":
            return (f"connection refused at {where}" if "refused" in exc.message.lower()
                    else f"cannot connect to {where}")
        if details.get("status") is not None:
            return f"HTTP {details['status']}"
        if isinstance(exc, ModelTimeout):
            return f"timed out at {where}"
        return " ".join(exc.message.split())[:200]

    def close(self, *, task_ended: bool = True) -> None:
        """With `luallm.auto_stop`, stop the models this run started once the task has ended; a
        paused task keeps them for its resume."""
        if self._cli is not None:
            if not task_ended:
                self._cli.started.clear()
            self._cli.close()
