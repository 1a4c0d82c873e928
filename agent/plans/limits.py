"""Plan limits: one dataclass, every field configurable, defaults from the architecture notes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["PlanLimits", "DEFAULT_RUN_ALLOW", "RUN_OUTPUT_BYTES", "MAX_SOURCE_BYTES"]

# Commands a plan may start with `tools.run`; each segment's first word must be one of these.
# No interpreters or test runners by default: the plan is attacker-controlled and could write a
# script (or a test file) and run it outside every sandbox limit. The builder's configured test
# command still runs after the plan; operators widen this with `--plan-run-allow`.
DEFAULT_RUN_ALLOW: tuple[str, ...] = (
    "ls", "cat", "echo", "grep", "wc", "head", "tail", "sort", "diff", "true", "false",
)
# Per stream (stdout, stderr) of one `tools.run` call; more is cut and flagged.
RUN_OUTPUT_BYTES = 256 * 1024
# A plan bigger than this is not a plan a model should write; refuse before compiling.
MAX_SOURCE_BYTES = 1024 * 1024


@dataclass
class PlanLimits:
    """Budgets for one plan run. `instructions=0` turns the count hook off (wall time still applies)."""

    instructions: int = 1_000_000_000
    wall_s: float = 30.0
    memory_bytes: int = 64 * 1024 * 1024
    output_bytes: int = 1024 * 1024
    tool_calls: int = 1000
    read_bytes: int = 64 * 1024 * 1024
    write_bytes: int = 16 * 1024 * 1024
    files_written: int = 100
    llm_calls: int = 8
    llm_prompt_bytes: int = 256 * 1024
    run_allow: tuple[str, ...] = DEFAULT_RUN_ALLOW
    run_timeout_ms: int = 30000
    # Tool names this plan may call (None: all). Roles other than the builder get read-only tools.
    tools: tuple[str, ...] | None = None
    # Agent home whose promoted skills (skills/allowed/) plans may call as `skills.NAME` (None: off).
    skills_home: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["run_allow"] = list(self.run_allow)
        out["tools"] = None if self.tools is None else list(self.tools)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanLimits:
        """Build from a (possibly partial) dict; unknown keys are ignored."""
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        if "run_allow" in kwargs:
            kwargs["run_allow"] = tuple(kwargs["run_allow"])
        if kwargs.get("tools") is not None:
            kwargs["tools"] = tuple(kwargs["tools"])
        return cls(**kwargs)
