"""What a role sees of the agent while it handles one command.

Roles never touch stdout or open files themselves: they write through `CommandContext.write`
(judged by the role's path policy, atomic, announced as `artifact.produced`) and report through
`log`/`progress`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.audit import AuditLog
from agent.errors import DeadlineExceeded, ModelNotConfigured
from agent.models.base import ModelClient
from agent.pathpolicy import PathPolicy, for_role
from agent.prompt import PromptBudget
from agent.protocol import Command
from agent.workspace import Artifact, Workspace, sanitize_id

__all__ = ["RoleSettings", "CommandContext", "Outcome", "NO_MODEL"]

NO_MODEL = "no model configured: pass --model and --base-url (or OPENAI_BASE_URL), --config, or --replay"


@dataclass
class RoleSettings:
    test_command: str | None = None
    test_timeout_s: float = 600.0
    spec_path: str | None = None
    budget: PromptBudget = field(default_factory=PromptBudget)
    max_repairs: int = 2
    max_tool_rounds: int = 3
    answers: str = "auto"  # --answers: auto | text | lua | plan | grammar | json (agent.answering.answer_form)
    max_tokens: int | None = None  # None: each role's default (agent.models.limits.default_max_tokens)
    plan_limits: Any = None  # agent.plans.PlanLimits, imported lazily
    max_review_rounds: int = 4  # review rounds on one task before the agent ends lorch's loop
    max_spec_rounds: int = 4    # update_spec rounds on one task, likewise
    context_bytes: int = 12 * 1024  # the builder's extra small project files, on top of the files it must see
    builder_rounds: int = 6  # builder: write → test → read the failures rounds (builder_rounds.py)
    disabled_repairs: frozenset[str] = frozenset()  # --disable-repair: names from agent.answering.strategies

    @property
    def prefer_plans(self) -> bool:
        """Whether Lua plans may be asked for (so the plan runtime is worth warming up)."""
        return self.answers != "json"


@dataclass
class Outcome:
    """A role's terminal event: name, payload and optional top-level status."""

    event: str
    payload: dict[str, Any]
    status: str | None = None


class CommandContext:
    def __init__(self, *, cmd: Command, role: str, workspace: Workspace, model: ModelClient | None,
                 settings: RoleSettings, audit: AuditLog, deadline: float,
                 emit: Callable[[str, dict[str, Any], str | None, list[dict[str, Any]] | None], None],
                 log: Callable[..., None], cancelled: Callable[[], bool],
                 redact: Callable[[str], str] = lambda s: s) -> None:
        self.cmd = cmd
        self.role = role
        self.workspace = workspace
        self.model = model
        self.settings = settings
        self.audit = audit
        self.deadline = deadline
        self._emit = emit
        self._log = log
        self.cancelled = cancelled
        self.redact = redact
        self.artifacts: list[Artifact] = []
        self.notes: dict[str, Any] = {}
        # What this role's own writes may touch: the base rule plus the role's one exception.
        self.policy: PathPolicy = for_role(role, sanitize_id(cmd.task_id))

    def require_model(self) -> ModelClient:
        if self.model is None:
            raise ModelNotConfigured(NO_MODEL)
        return self.model

    def seconds_left(self) -> float:
        return self.deadline - time.time()

    def check_deadline(self) -> None:
        if self.seconds_left() <= 0:
            raise DeadlineExceeded("the command deadline passed", deadline=self.cmd.deadline)

    def write(self, rel: str, data: bytes | str, policy: PathPolicy | None = None) -> Artifact:
        """Atomic workspace write, announced at once as `artifact.produced`.

        Written exactly as given, never rewritten: content carrying a secret value is refused
        (`secret_in_artifact`) by the workspace, like a path the policy forbids.
        """
        art = self.workspace.write_atomic(rel, data, policy=policy or self.policy)
        self.add_artifact(art)
        return art

    def add_artifact(self, art: Artifact) -> None:
        self.artifacts = [a for a in self.artifacts if a.path != art.path] + [art]
        self._emit("artifact.produced", {"path": art.path, "sha256": art.sha256, "size": art.size},
                   None, [art.to_dict()])

    def progress(self, message: str, stage: str = "implementing", progress: float | None = None,
                  **fields: Any) -> None:
        """`builder.progress` {stage, progress?, message} for the builder (lorch's shape); audit for all."""
        self.audit.record("progress", task_id=self.cmd.task_id, message=message, stage=stage, **fields)
        if self.role == "builder":
            payload: dict[str, Any] = {"stage": stage, "message": message[:500], **fields}
            if progress is not None:
                payload["progress"] = progress
            self._emit("builder.progress", payload, None, None)

    def log(self, level: str, message: str, **fields: Any) -> None:
        self._log(level, message, **fields)
