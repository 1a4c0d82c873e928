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

from agent.errors import ModelError, ModelNotConfigured, ModelNotRunning, NoModelAvailable
from agent.models.base import ModelClient, ModelReply, ModelRequest
from agent.models.luallm import LuallmCLI, start_command
from agent.models.notes import parse_note
from agent.supervised.events import TaskAudit
from agent.supervised.home import HomeConfig

__all__ = ["ModelPicker"]


class ModelPicker:
    def __init__(self, config: HomeConfig, audit: TaskAudit, *, scripted: ModelClient | None = None) -> None:
        self.config = config
        self.audit = audit
        self.scripted = scripted
        self.excluded: set[str] = set()  # crashed during this process
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
                                  command_timeout_s=float(lu.get("command_timeout_s", 15.0)),
                                  ready_timeout_s=float(self.config.limit("model_start_timeout_seconds")))
        return self._cli

    def check_running(self, model: str) -> bool:
        status = self.cli().status().server(model)
        return status is not None and status.running

    def pick(self, task_type: str, override: str | None = None) -> tuple[str, int | None]:
        """(model, port) to use now; ModelNotRunning / NoModelAvailable otherwise."""
        cli = self.cli()
        status = cli.status()
        candidates = [override] if override else self.config.selection(task_type)
        candidates = [c for c in candidates if c not in self.excluded]
        if not candidates and not (override or self.config.selection(task_type)):
            running = [s for s in status.servers if s.running and s.model not in self.excluded]
            if running:
                self.audit.record("model_selected", model=running[0].model, task_type=task_type, running=True,
                                  reason="no model_selection: first running luallm model")
                return running[0].model, running[0].port
            installed = [m.name for m in cli.list_models() if m.name not in self.excluded]
            if not installed:
                raise NoModelAvailable("luallm has no installed model; install one, then `luallm start MODEL`",
                                       tried=[])
            candidates = installed[:1]
        try:
            notes = cli.notes()
        except ModelError:
            notes = {}
        usable: list[str] = []
        for name in candidates:
            note = notes.get(name)
            flags = parse_note(note.content if note else None)
            if flags.unsuitable & {task_type, "all", "*"}:
                self.audit.record("model_skip", model=name, task_type=task_type, reason="flagged in luallm notes")
                continue
            usable.append(name)
        for name in usable:
            server = status.server(name)
            if server is not None and server.running:
                self.audit.record("model_selected", model=name, task_type=task_type, running=True)
                return name, server.port
        if not usable:
            raise NoModelAvailable(f"no viable model for task type {task_type!r}: every candidate is excluded or "
                                   f"flagged ({', '.join(candidates) or 'none'}); check `luallm status`",
                                   tried=candidates)
        if self.config.auto_start:
            started = cli.ensure_ready(usable[0])
            self.audit.record("model_selected", model=usable[0], task_type=task_type, started=True)
            return usable[0], started.port
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

        return OpenAIChatModel(f"http://127.0.0.1:{port}/v1", model,
                               timeout_s=float(self.config.limit("llm_timeout_seconds")), audit=self.audit)

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
        while True:
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
                if not self.uses_luallm or not self._died(model, exc, prompt):
                    raise
                self.excluded.add(model)
                self.audit.record("model_fallback", model=model, task_type=task_type, reason="crashed")
                continue
            self.audit.record("llm_response", model=model, response_sha256=hashlib.sha256(reply.text.encode())
                              .hexdigest(), tokens_in=reply.usage.prompt_tokens,
                              tokens_out=reply.usage.completion_tokens,
                              latency_ms=round((time.perf_counter() - t0) * 1000, 1))
            self.replies.append({"model": model, "task_type": task_type, "text": reply.text[:65536]})
            return reply

    def _died(self, model: str, exc: ModelError, prompt: str) -> bool:
        try:
            why: dict[str, Any] | None = self.cli().diagnose(model)
        except ModelError:
            return False
        if why is None:
            return False
        tokens = len(prompt) // 4
        self.audit.record("model_oom", model=model, context_tokens_est=tokens, error=exc.message, **why)
        self.cli().suggest_note(model, f"max_prompt_tokens: {max(256, int(tokens * 0.9))} (crashed at ~{tokens})")
        return True

    def close(self) -> None:
        if self._cli is not None:
            self._cli.close()
