"""The serve loop: lifecycle, heartbeats, dispatch, failures, EOF/SIGTERM/parent death.

The main thread reads stdin (bounded lines) and answers bad input at once; commands run one at
a time on a worker thread so heartbeats keep flowing and shutdown stays prompt. Every accepted
command ends with exactly one terminal event, also on failure (see `_fail`).
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from agent import __version__
from agent.audit import AuditLog
from agent.clock import seconds_until
from agent.command_context import NO_MODEL, CommandContext, Outcome, RoleSettings
from agent.errors import (
    AgentError,
    DeadlineExceeded,
    InternalError,
    InvalidCommand,
    MessageTooLarge,
    ModelNotConfigured,
    ShuttingDown,
    UnsupportedAction,
    VersionMismatch,
    error_from_os,
)
from agent.heartbeat import HeartbeatPump
from agent.models.base import ModelClient, ModelSettings
from agent.models.usage import UsageTracker
from agent.pathpolicy import AGENT
from agent.protocol import ROLE_ACTIONS, Command, build_event, decode_command, parse_line, recover_ids
from agent.receipts import ReceiptStore, inputs_digest
from agent.redact import Redactor
from agent.transport import (
    DEFAULT_MAX_INPUT_LINE,
    MAX_STDOUT_LINE,
    LineReader,
    Oversize,
    Writer,
    cut_strings,
    truncate_marked,
)
from agent.workspace import AGENT_DIR, Workspace, sha256_bytes
from agent.workspace_write import begin_shutdown

__all__ = ["AgentConfig", "Agent", "EXIT_UNRECOVERABLE"]

EXIT_UNRECOVERABLE = 3
_SHUTDOWN_GRACE_S = 2.5


@dataclass
class AgentConfig:
    role: str
    workspace: Path
    heartbeat_interval: float = 10.0
    max_input_line: int = DEFAULT_MAX_INPUT_LINE
    max_stdout_logs: int = 20
    exit_on_unrecoverable: bool = True
    drain: bool = False  # at stdin EOF, finish every command received first (fixture replay)
    models: ModelSettings = field(default_factory=ModelSettings)
    roles: RoleSettings = field(default_factory=RoleSettings)
    model_client: ModelClient | None = None  # tests and `replay` may inject one
    redactor: Redactor | None = None  # shared with an injected client (e.g. its recorder)


class Agent:
    def __init__(self, config: AgentConfig, stdin: BinaryIO, stdout: BinaryIO) -> None:
        self.config = config
        self.role = config.role
        self.redactor = config.redactor or Redactor()
        if config.models.api_key:
            self.redactor.add(config.models.api_key)
        # Every write refuses content carrying a secret the redactor knows (read at each write).
        self.workspace = Workspace(config.workspace, secret_values=self.redactor.values)
        self.audit = AuditLog(self.workspace.root / AGENT_DIR / "audit.jsonl", self.redactor,
                              anchor=self.workspace.root)
        self.writer = Writer(stdout, redact=self.redactor.data, spill=self._spill,
                             max_logs=config.max_stdout_logs)
        self.reader = LineReader(stdin, config.max_input_line)
        self.pump = HeartbeatPump(agent_type=self.role, write=self.writer.write,
                                  interval=config.heartbeat_interval,
                                  on_parent_death=lambda: self.shutdown("parent process died"))
        self.receipts = ReceiptStore(self.workspace)
        try:  # before any command runs: commands see the records read-only only where they exist
            (self.workspace.root / "receipts").mkdir(exist_ok=True)
        except OSError:
            pass
        self.pinned_snapshot: str | None = None
        self.commands: queue.Queue[Command | None] = queue.Queue()
        self.current: Command | None = None
        self._model: ModelClient | None = config.model_client
        self._model_built = config.model_client is not None
        self._stopping = threading.Event()
        self._stop_reason = ""
        self._shutdown_lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()

    # -- lifecycle ---------------------------------------------------------------------------
    def serve(self) -> int:
        self.audit.record("start", role=self.role, pid=os.getpid(), version=__version__,
                          workspace=str(self.workspace.root))
        self.pump.beat("starting")
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: threading.Thread(target=self.shutdown, args=("signal",)).start())
        worker = threading.Thread(target=self._work, name="commands", daemon=True)
        worker.start()
        self.pump.beat("ready")
        self.pump.start()
        threading.Thread(target=self._warm_up, name="warm-up", daemon=True).start()
        while not self._stopping.is_set():
            try:
                line = self.reader.read()
            except (OSError, ValueError) as exc:  # stdin unreadable: as good as closed
                self.audit.record("stdin_failed", error=repr(exc))
                break
            if line is None:
                break
            self.pump.touch()
            self._accept(line)
        if self.config.drain and not self._stopping.is_set():
            self.audit.record("draining", pending=self.commands.qsize(), busy=self.current is not None)
            self.commands.put(None)  # the worker runs what was received, then returns
            while worker.is_alive() and not self._stopping.is_set():
                worker.join(0.5)
        self.shutdown("stdin closed")
        threading.Event().wait()  # another thread is already shutting down; it exits the process
        return 0  # not reached

    def _warm_up(self) -> None:
        self._start_checks()
        # Import validators (and the plan runtime) after `ready`, so start-up stays fast.
        try:
            from agent.protocol import validator

            validator("command.schema.json")
            validator(f"answers/{self.role}.json")
            if self.config.roles.prefer_plans and self.role != "builder":  # the builder's files come as text
                from agent.plans import prewarm_workers

                prewarm_workers()  # the first plan then starts in ~15 ms, not ~80
        except Exception as exc:  # warm-up is an optimisation only
            self.audit.exception("warm_up_failed", exc)

    def _start_checks(self) -> None:
        """Say which OS sandbox is in force (stderr + audit), and clear what a killed agent left."""
        try:
            from agent.sandbox import current
            from agent.stale import remove_stale_sandbox_dirs, remove_stale_temps

            boundary = current()
            self.audit.record("sandbox", summary=boundary.describe(), mode=boundary.mode,
                              commands_allowed=boundary.commands_allowed)
            removed = remove_stale_temps(self.workspace.root)
            dirs = remove_stale_sandbox_dirs()
            if removed or dirs:
                self.audit.record("stale_removed", temp_files=removed[:50], count=len(removed), sandbox_dirs=dirs)
        except Exception as exc:  # a report and a cleanup: never a reason not to serve
            self.audit.exception("start_checks_failed", exc)

    def shutdown(self, reason: str, exit_code: int = 0) -> None:
        """Stop within the 5 s lorch allows: let a running command finish briefly, then exit."""
        if not self._shutdown_lock.acquire(blocking=False):
            return
        self._stop_reason = reason
        self._stopping.set()
        self.audit.record("stopping", reason=reason, busy=self.current is not None)
        self.pump.beat("stopping")
        self._idle.wait(_SHUTDOWN_GRACE_S)
        if self.current is not None:
            self._not_run(self.current, reason, "interrupted")
        self._refuse_queued()
        removed = begin_shutdown()
        _stop_children()
        self._close_model()
        self.pump.stop()
        self.audit.record("stopped", reason=reason, temp_files_removed=removed, exit_code=exit_code)
        try:
            sys.stderr.flush()
        finally:
            os._exit(exit_code)

    def _not_run(self, cmd: Command, reason: str, what: str) -> None:
        """Never drop a received command silently: say so on stderr and in the audit log."""
        hint = ("run with --drain (automatic when stdin is a regular file) to finish every command "
                "received before EOF" if reason == "stdin closed" else "")
        self.audit.record("command_not_run", task_id=cmd.task_id, action=cmd.action, state=what, reason=reason,
                          message=f"command {cmd.task_id} ({cmd.action}) {what}: {reason}" + (f"; {hint}" if hint else ""))

    # -- input -------------------------------------------------------------------------------
    def _accept(self, line: bytes | Oversize) -> None:
        """Answer one stdin line: a queued command or an `error` event, whatever the line holds."""
        try:
            self._accept_line(line)
        except Exception as exc:  # a bug must cost one error event, never the serve loop
            try:
                self.audit.exception("accept_failed", exc)
                self._reject(InternalError(f"internal error while reading a line: {type(exc).__name__}"), {})
            except Exception:
                pass

    def _accept_line(self, line: bytes | Oversize) -> None:
        if isinstance(line, Oversize):
            self._reject(MessageTooLarge(
                f"input line of {line.size} bytes exceeds the {self.config.max_input_line}-byte limit; discarded",
                size=line.size, limit=self.config.max_input_line), {})
            return
        if not line.strip():
            return
        try:
            obj = parse_line(line)  # refuses deep nesting before anything recursive sees it
        except AgentError as exc:
            self._reject(exc, recover_ids(line))
            return
        ids = recover_ids(obj)
        try:
            # Secrets in the inputs are known before anything about this line is written.
            self.redactor.harvest(obj)
            cmd = decode_command(obj)
        except AgentError as exc:
            self._reject(exc, ids)
            return
        if cmd.agent_type != self.role:
            self._reject(InvalidCommand(
                f"at $.to.agent_type: this agent serves the {self.role} role, not {cmd.agent_type!r}"), ids)
            return
        if cmd.action not in ROLE_ACTIONS[self.role]:
            self._reject(UnsupportedAction(
                f"action {cmd.action!r} is not served by the {self.role} role (serves: "
                f"{', '.join(ROLE_ACTIONS[self.role])})", action=cmd.action), ids)
            return
        self.commands.put(cmd)

    def _reject(self, err: AgentError, ids: dict[str, str]) -> None:
        self.audit.record("rejected", code=err.code, message=err.message,
                          **{k: truncate_marked(v, 1024) for k, v in ids.items()})
        self.writer.write(build_event(agent_type=self.role, task_id=ids.get("task_id", "unknown"),
                                      correlation_id=ids.get("correlation_id", "unknown"), event="error",
                                      status="failed", payload=err.payload()))

    # -- commands ----------------------------------------------------------------------------
    def _refuse_queued(self) -> None:
        """Commands accepted but not started when the agent stops still get their failure events."""
        while True:
            try:
                cmd = self.commands.get_nowait()
            except queue.Empty:
                return
            if cmd is not None:
                self._not_run(cmd, self._stop_reason, "not started")
                self._fail(cmd, ShuttingDown("the agent stopped before this command started"), None)

    def _work(self) -> None:
        while True:
            cmd = self.commands.get()
            if cmd is None:
                return
            if self._stopping.is_set():
                self._not_run(cmd, self._stop_reason, "not started")
                self._fail(cmd, ShuttingDown("the agent stopped before this command started"), None)
                continue
            self._idle.clear()
            try:
                self._run(cmd)
            except Exception as exc:  # _run answers every failure; this guards the worker thread itself
                try:
                    self.audit.exception("worker_failed", exc, task_id=truncate_marked(cmd.task_id, 1024))
                except Exception:
                    pass
            finally:
                self.current = None
                self._idle.set()
                if not self._stopping.is_set():
                    self.pump.beat("ready")

    def _emit(self, cmd: Command, event: str, payload: dict[str, Any], status: str | None = None,
              artifacts: list[dict[str, Any]] | None = None) -> None:
        self.writer.write(build_event(agent_type=self.role, task_id=cmd.task_id,
                                      correlation_id=cmd.correlation_id, event=event, payload=payload,
                                      status=status, artifacts=artifacts, snapshot_id=cmd.snapshot_id))

    def log(self, level: str, message: str, **fields: Any) -> None:
        self.audit.record("log", level=level, message=message, **fields)
        self.writer.log(level, message, fields)

    def _close_model(self) -> None:
        # close() may stop models this process auto-started; never let it delay the exit.
        if self._model is None:
            return
        closer = threading.Thread(target=self._model.close, daemon=True)
        closer.start()
        closer.join(1.0)

    def _model_client(self) -> ModelClient | None:
        if not self._model_built:
            from agent.models.factory import build_model_client

            self._model = build_model_client(self.config.models, self.audit, self.redactor)
            self._model_built = True
        return self._model

    def _run(self, cmd: Command) -> None:
        self.current = cmd
        self.pump.beat("busy", cmd.task_id)
        self.log("info", "command accepted", task_id=cmd.task_id, action=cmd.action)
        ctx: CommandContext | None = None
        started = time.monotonic()
        try:
            self._check_version(cmd)
            left = seconds_until(cmd.deadline)
            if left <= 0:
                raise DeadlineExceeded("the command deadline has already passed", deadline=cmd.deadline)
            in_digest = inputs_digest(cmd)
            receipt, why = self.receipts.lookup(cmd, in_digest, self.workspace.digest())
            for rejected in self.receipts.rejected:
                self.audit.record("receipt_rejected", task_id=cmd.task_id, receipt=rejected,
                                  reason="the receipt's MAC does not match: written or changed by something else")
            self.receipts.rejected.clear()
            if receipt is not None:
                self.log("info", "receipt hit: replaying", task_id=cmd.task_id, receipt=receipt.path)
                for art in receipt.artifacts:
                    self._emit(cmd, "artifact.produced", art.to_dict(), artifacts=[art.to_dict()])
                t = receipt.terminal
                self._emit(cmd, t["event"], t["payload"], t.get("status"),
                           [a.to_dict() for a in receipt.artifacts] or None)
                return
            self.log("info", "receipt miss", task_id=cmd.task_id, reason=why)
            client = self._model_client()
            if client is None:
                raise ModelNotConfigured(NO_MODEL)
            tracker = UsageTracker(client)  # per command; the shared client is never closed here
            ctx = CommandContext(
                cmd=cmd, role=self.role, workspace=self.workspace, model=tracker,
                settings=self.config.roles, audit=self.audit, deadline=time.time() + left,
                emit=lambda e, p, s, a: self._emit(cmd, e, p, s, a), log=self.log,
                cancelled=self._stopping.is_set, redact=self.redactor.text)
            from agent.roles import handler_for

            outcome = handler_for(self.role)(ctx)
            self._check_expected_outputs(ctx)
            usage = tracker.summary()
            if usage["calls"]:
                outcome.payload["usage"] = usage
            self._complete(cmd, ctx, outcome, in_digest)
        except AgentError as err:
            self._fail(cmd, err, ctx)
        except OSError as exc:  # the OS said no: a precise code by errno, not internal_error
            self.audit.exception("os_error", exc, task_id=cmd.task_id)
            self._fail(cmd, error_from_os(exc, "the command failed"), ctx)
        except Exception as exc:  # a bug: never a traceback on stdout, always a terminal event
            self.audit.exception("internal_error", exc, task_id=cmd.task_id)
            self._fail(cmd, InternalError(f"internal error: {type(exc).__name__}: {exc}"), ctx)
        finally:
            self.audit.record("command_done", task_id=cmd.task_id, action=cmd.action,
                              seconds=round(time.monotonic() - started, 3))

    def _check_version(self, cmd: Command) -> None:
        if self.pinned_snapshot is None:
            self.pinned_snapshot = cmd.snapshot_id
        elif cmd.snapshot_id != self.pinned_snapshot:
            raise VersionMismatch(
                f"expected snapshot {self.pinned_snapshot}, observed {cmd.snapshot_id}",
                expected_snapshot=self.pinned_snapshot, observed_snapshot=cmd.snapshot_id)

    def _check_expected_outputs(self, ctx: CommandContext) -> None:
        from agent.errors import ArtifactWriteFailed, PathRejected

        produced = {a.path for a in ctx.artifacts}
        for out in ctx.cmd.expected_outputs:
            try:
                # Judged on the normalised path: `./out.md` is the `out.md` the role produced.
                ok = self.workspace.normalize(out.path) in produced or self.workspace.is_file(out.path)
                why = "was not produced"
                if not ok:  # a path through a link is refused, whichever door it came by: say that
                    self.workspace.resolve(out.path, policy=AGENT)
            except PathRejected as exc:
                if out.required:
                    raise  # the path itself is refused: say so precisely, not "not produced"
                ok, why = False, exc.message
            if ok:
                continue
            if out.required:
                raise ArtifactWriteFailed(f"required output {out.path} {why}", path=out.path)
            self.log("warn", "optional output missing", path=out.path, reason=why)

    def _complete(self, cmd: Command, ctx: CommandContext, outcome: Outcome, in_digest: str) -> None:
        terminal: dict[str, Any] = {"event": outcome.event, "payload": outcome.payload}
        if outcome.status is not None:
            terminal["status"] = outcome.status
        # Record before the terminal event: a crash in between is a resend that replays.
        self.receipts.record(cmd, in_digest, self.workspace.digest(), ctx.artifacts,
                             self.redactor.data(terminal), outcome.payload.get("usage"))
        self._emit(cmd, outcome.event, outcome.payload, outcome.status,
                   [a.to_dict() for a in ctx.artifacts] or None)

    def _fail(self, cmd: Command, err: AgentError, ctx: CommandContext | None) -> None:
        """error event, then the role's own terminal expression of failure (see MASTER-SPEC §Failures)."""
        self.audit.record("command_failed", task_id=cmd.task_id, **err.payload())
        self._emit(cmd, "error", err.payload(), "failed")
        if self.role == "builder":
            arts = [a.to_dict() for a in ctx.artifacts] if ctx else []
            self._emit(cmd, "builder.completed", {
                "summary": f"failed: {err.code}: {err.message}",
                "tests": {"status": "fail", "summary": f"not run: the command failed ({err.code})"},
                "error": err.payload()}, "failed", arts or None)
        elif self.role in ("reviewer", "spec_maintainer") and self.config.exit_on_unrecoverable:
            # lorch has no failed terminal event for these roles and would wait 30 minutes:
            # exiting non-zero makes it fail the run at once ("agent events channel closed").
            threading.Thread(target=self.shutdown, args=(f"unrecoverable {err.code}", EXIT_UNRECOVERABLE),
                             daemon=True).start()

    # -- oversize payloads -------------------------------------------------------------------
    def _spill(self, message: dict[str, Any], line: bytes) -> dict[str, Any]:
        payload = message.get("payload") or {}
        raw = orjson.dumps(self.redactor.data(payload), option=orjson.OPT_INDENT_2)
        rel = f"{AGENT_DIR}/spill/{message.get('message_id', 'message')}.json"
        try:
            art = self.workspace.write_atomic(rel, raw, policy=AGENT)
            spilled: dict[str, Any] = art.to_dict()
        except AgentError as exc:
            spilled = {"error": exc.message, "sha256": sha256_bytes(raw), "size": len(raw)}
        except OSError as exc:
            spilled = {"error": error_from_os(exc, "spill failed").message, "sha256": sha256_bytes(raw),
                       "size": len(raw)}
        note = f" [payload of {len(line)} bytes written to {rel}]"
        # Every field stays, its strings cut shorter until the event fits: lorch's schema needs the
        # event's own fields (an intake's plan_candidates and derived_tasks, a builder's tests).
        # Still too large at the shortest (a huge list): the writer keeps only the essentials next.
        kept: dict[str, Any] = {}
        for keep_bytes in _SPILL_KEEP_BYTES:
            kept = cut_strings(payload, keep_bytes)
            kept["summary"] = truncate_marked(str(payload.get("summary", "")), keep_bytes) + note
            kept["spilled"] = spilled
            if len(orjson.dumps(kept)) <= MAX_STDOUT_LINE // 2:
                break
        return kept


_SPILL_KEEP_BYTES = (2000, 400, 80)  # per string of a spilled payload, tried in turn


def _stop_children() -> None:
    from agent.test_command import kill_running_tests

    kill_running_tests()
    if "agent.plans.pool" in sys.modules:  # only when a plan worker was ever started
        try:
            sys.modules["agent.plans.pool"].shutdown_workers()
        except Exception:
            pass
