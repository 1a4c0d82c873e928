"""An in-process `CommandContext` for testing roles and the answer loop without a subprocess."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support import make_command

from agent.audit import AuditLog
from agent.command_context import CommandContext, RoleSettings
from agent.models.base import ModelReply, ModelRequest, Usage
from agent.protocol import decode_command
from agent.redact import Redactor
from agent.workspace import Workspace


@dataclass
class FakeModel:
    """Replies in order (a str, a ModelReply, or an exception to raise); remembers every request."""

    replies: list[Any]
    requests: list[ModelRequest] = field(default_factory=list)
    caps: Any = None

    def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, ModelReply):
            return reply
        return ModelReply(text=reply, model="fake", usage=Usage(1, 1, 0.0))

    def close(self) -> None:
        return None


@dataclass
class Caps:
    """What a capability probe reports (the fields of `agent.models.base.Capabilities` that matter)."""

    streaming: bool = True
    json_schema: bool | None = True
    grammar: bool = False
    server: str = "llama.cpp"


class FakeModelWithCaps(FakeModel):
    probes = 0

    def capabilities(self) -> Any:
        FakeModelWithCaps.probes += 1
        return self.caps


@dataclass
class Recorded:
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    logs: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


def make_context(workspace: Path, action: str, model: Any, *, inputs: dict[str, Any] | None = None,
                 settings: RoleSettings | None = None, task_id: str = "T-0001",
                 record: Recorded | None = None) -> CommandContext:
    cmd = decode_command(make_command(action, inputs=inputs, task_id=task_id))
    ws = Workspace(workspace)
    rec = record if record is not None else Recorded()
    return CommandContext(
        cmd=cmd, role=cmd.raw["to"]["agent_type"], workspace=ws, model=model, settings=settings or RoleSettings(),
        audit=AuditLog(ws.root / "logs/luallm-agent/audit.jsonl", Redactor()), deadline=time.time() + 120,
        emit=lambda e, p, s, a: rec.events.append((e, p)),
        log=lambda level, message, **f: rec.logs.append((level, message, f)),
        cancelled=lambda: False)
