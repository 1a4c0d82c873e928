"""What a role asks of an answer (`AnswerSpec`), what it gets (`Answer`), and the checks every
answer form shares: JSON out of a reply, the role's schema, the role's own rules."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from agent.errors import InvalidAnswer
from agent.fences import blocks
from agent.protocol import schema_errors

if TYPE_CHECKING:
    from agent.command_context import CommandContext

__all__ = ["AnswerSpec", "Answer", "extract_json", "strings_in", "schema_of", "role_rules", "validate"]


@dataclass
class AnswerSpec:
    """What a role asks of an answer.

    `prepare` runs on the decoded answer before the schema: it resolves what the agent can
    resolve itself (logging it) and raises `InvalidAnswer` with a precise message for common
    shape mistakes. `check` applies the role's rules to a schema-valid answer and raises a
    repairable error. `salvage`, after the repair budget, returns the answer without the parts
    that failed (logging what it dropped), or None when nothing valid remains.
    """

    role: str
    task_type: str
    check: Callable[[dict[str, Any]], None] | None = None
    prepare: Callable[[Any], Any] | None = None
    salvage: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    # The role writes its whole answer into a workspace file (review, spec notes, planning
    # artifact): a secret anywhere in it is refused up front, while the model can repair it.
    guard_answer: bool = True
    # More for a plan's `context` table (plain data): what the agent found out before asking, so a
    # plan can use it, e.g. the reviewer's `examples` (the goal's examples as the agent ran them).
    plan_context: dict[str, Any] | None = None

    @property
    def schema_name(self) -> str:
        return f"answers/{self.role}.json"


@dataclass
class Answer:
    data: dict[str, Any]
    via: str  # "json" | "lua" | "actions"
    attempts: int
    plan: Any = None  # agent.plans.PlanOutcome when a Lua plan produced the answer
    tool_rounds: list[Any] = field(default_factory=list)
    form: str = "json"
    salvaged: bool = False


def extract_json(text: str) -> Any:
    """A JSON value from a bare reply or a ```json fence; raises InvalidAnswer."""
    stripped = text.strip()
    candidates = [stripped] if stripped.startswith(("{", "[")) else []
    candidates += [b.body for b in blocks(text) if b.lang in ("", "json")]
    first, last = stripped.find("{"), stripped.rfind("}")
    if first != -1 and last > first:
        candidates.append(stripped[first:last + 1])
    error = "the reply contains no JSON object"
    for c in candidates:
        try:
            return orjson.loads(c)
        except orjson.JSONDecodeError as exc:
            error = f"invalid JSON: {exc}"
    raise InvalidAnswer(error)


def strings_in(value: Any) -> Iterator[str]:
    """Every string inside nested JSON-like data (dict values, list items), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v)


def schema_of(spec: AnswerSpec) -> dict[str, Any]:
    from agent.protocol import validator

    return validator(spec.schema_name).schema  # type: ignore[no-any-return]  # cached, not re-read per request


def role_rules(ctx: CommandContext, spec: AnswerSpec, data: dict[str, Any]) -> None:
    """The role's own rules, then the secret guard on answers that become files whole."""
    if spec.check:
        spec.check(data)
    if spec.guard_answer:
        for text in strings_in(data):
            ctx.workspace.guard_content("the answer", text.encode("utf-8", "replace"))


def validate(spec: AnswerSpec, data: Any) -> dict[str, Any]:
    """Prepare and schema-check an answer (the role's rules run separately, see `obtain_answer`)."""
    if spec.prepare is not None:
        data = spec.prepare(data)
    if not isinstance(data, dict):
        raise InvalidAnswer(f"the answer must be a JSON object (Lua table), got {type(data).__name__}")
    errors = schema_errors(spec.schema_name, data)
    if errors:
        raise InvalidAnswer("the answer does not match the schema: " + "; ".join(errors))
    return data
