"""Getting a valid answer from the model: JSON answer, Lua plan, or strict action list.

The harness, not the model, controls the loop (seed 002): an invalid answer is sent back with
the exact error a bounded number of times; an action list is executed and its results are sent
back for the final answer, also bounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from agent.errors import (
    AgentError,
    ForbiddenSpecEdit,
    InvalidModelResponse,
    PathRejected,
    PlanError,
    PlanFileMissing,
    SecretInArtifact,
)
from agent.models.base import ModelRequest
from agent.protocol import schema_errors
from agent.roles.context import CommandContext

__all__ = ["AnswerSpec", "Answer", "InvalidAnswer", "obtain_answer", "extract_json"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)\n?```", re.S)


class InvalidAnswer(AgentError):
    """An answer that failed parsing or validation; only ever fed back to the model."""
    code = "invalid_model_response"


# Errors worth sending back to the model with their exact message.
_REPAIRABLE = (InvalidAnswer, PlanError, ForbiddenSpecEdit, PlanFileMissing, PathRejected, SecretInArtifact)


@dataclass
class AnswerSpec:
    role: str
    task_type: str
    check: Callable[[dict[str, Any]], None] | None = None  # role rules; raise a repairable error
    # The role writes its whole answer into a workspace file (review, spec notes, planning
    # artifact): a secret anywhere in it is refused up front, while the model can repair it.
    # The builder writes only its files' contents, which its `check` guards instead.
    guard_answer: bool = True

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


def extract_json(text: str) -> Any:
    """A JSON value from a bare reply or a ```json fence; raises InvalidAnswer."""
    stripped = text.strip()
    candidates = [stripped] if stripped.startswith(("{", "[")) else []
    candidates += [m.group(1) for m in _FENCE.finditer(text)]
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


def _structured(ctx: CommandContext, spec: AnswerSpec) -> dict[str, Any] | None:
    """The answer schema as `response_format`, only when plans are off (a schema forbids Lua)."""
    if ctx.settings.prefer_plans:
        return None
    from agent.protocol import validator

    return validator(spec.schema_name).schema  # type: ignore[no-any-return]  # cached, not re-read per request


def _plans() -> Any:
    import agent.plans as plans  # lazy: lupa is only needed when a plan arrives

    return plans


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _validate(ctx: CommandContext, spec: AnswerSpec, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InvalidAnswer(f"the answer must be a JSON object (Lua table), got {type(data).__name__}")
    errors = schema_errors(spec.schema_name, data)
    if errors:
        raise InvalidAnswer("the answer does not match the schema: " + "; ".join(errors))
    if spec.check:
        spec.check(data)
    if spec.guard_answer:
        for text in _strings(data):
            ctx.workspace.guard_content("the answer", text.encode("utf-8", "replace"))
    return data


def obtain_answer(ctx: CommandContext, spec: AnswerSpec, messages: list[dict[str, str]]) -> Answer:
    """Ask the model until a valid answer arrives or the repair budget runs out."""
    model = ctx.require_model()
    messages = list(messages)
    last: AgentError | None = None
    tool_rounds = 0
    attempt = 0
    while True:
        attempt += 1
        ctx.check_deadline()
        request = ModelRequest(messages=messages, task_type=spec.task_type if attempt == 1 else "plan_repair",
                               role=spec.role, deadline=ctx.deadline, response_schema=_structured(ctx, spec),
                               max_tokens=ctx.settings.max_tokens,
                               schema_name=f"{spec.role}_answer")
        reply = model.complete(request)
        ctx.log("info", "model answered", model=reply.model, attempt=attempt, chars=len(reply.text))
        try:
            answer = _interpret(ctx, spec, reply.text, attempt)
        except _ToolRound as round_:
            tool_rounds += 1
            if tool_rounds > ctx.settings.max_tool_rounds:
                raise InvalidModelResponse(
                    f"the model kept sending action lists ({tool_rounds}) without a final answer") from None
            messages += [{"role": "assistant", "content": reply.text},
                         {"role": "user", "content": "Tool results:\n" + round_.results +
                          "\n\nNow reply with the final answer (a Lua plan or the JSON answer)."}]
            attempt -= 1  # a tool round is progress, not a failed attempt
            continue
        except _REPAIRABLE as exc:
            last = exc
            ctx.audit.record("answer_rejected", task_id=ctx.cmd.task_id, attempt=attempt, code=exc.code,
                             error=exc.message)
            if attempt > ctx.settings.max_repairs:
                break
            # Only the start of the rejected reply goes back: the error is what helps, and a
            # small model's context fills up fast when every repair resends a whole answer.
            messages += [{"role": "assistant", "content": _clip(reply.text)},
                         {"role": "user", "content": f"Your answer was rejected ({exc.code}): {exc.message}\n"
                          "Reply again with a corrected, complete answer."}]
            continue
        ctx.log("info", "answer validated", via=answer.via, attempts=attempt)
        return answer
    assert last is not None
    if isinstance(last, PlanError | ForbiddenSpecEdit | PlanFileMissing | PathRejected | SecretInArtifact):
        raise last
    raise InvalidModelResponse(f"no valid answer after {attempt} attempts; last error: {last.message}",
                               attempts=attempt)


_REJECTED_KEEP = 1500


def _clip(text: str) -> str:
    if len(text) <= _REJECTED_KEEP:
        return text
    return f"{text[:_REJECTED_KEEP]}\n[… {len(text) - _REJECTED_KEEP} more characters of the rejected answer omitted …]"


class _ToolRound(Exception):
    def __init__(self, results: str) -> None:
        super().__init__("tool round")
        self.results = results


def _interpret(ctx: CommandContext, spec: AnswerSpec, text: str, attempt: int) -> Answer:
    plans = _plans()
    source = plans.find_lua_plan(text)
    if source is not None:
        outcome = plans.run_plan(source, plan_context(ctx), workspace=ctx.workspace,
                                 limits=plan_limits_for(ctx), host=PlanHostAdapter(ctx),
                                 audit=ctx.audit, deadline=ctx.deadline)
        for art in outcome.artifacts:
            ctx.add_artifact(art)
        ctx.log("info", "plan ran", run_id=outcome.run_id, tool_calls=len(outcome.tool_calls))
        return Answer(_validate(ctx, spec, outcome.result), "lua", attempt, plan=outcome)
    data = extract_json(text)
    actions = plans.parse_action_list(data)
    if actions is not None:
        outcome = plans.run_actions(actions, workspace=ctx.workspace, limits=plan_limits_for(ctx),
                                    host=PlanHostAdapter(ctx), audit=ctx.audit, deadline=ctx.deadline)
        for art in outcome.artifacts:
            ctx.add_artifact(art)
        results = orjson.dumps(outcome.result, default=str).decode()
        raise _ToolRound(results[:32 * 1024])
    return Answer(_validate(ctx, spec, data), "json", attempt)


def plan_tools_for(role: str) -> tuple[str, ...] | None:
    """Only the builder's plans change files; the other roles' file effects come from their answer."""
    if role == "builder":
        return None
    from agent.plans.tools import READ_ONLY_TOOLS

    return READ_ONLY_TOOLS


def plan_limits_for(ctx: CommandContext) -> Any:
    from dataclasses import replace

    from agent.plans.limits import PlanLimits

    base = ctx.settings.plan_limits or PlanLimits()
    return replace(base, tools=plan_tools_for(ctx.role))


def plan_context(ctx: CommandContext) -> dict[str, Any]:
    """The `context` table a plan's `run(context)` receives: plain data only."""
    files = []
    for i, rel in enumerate(ctx.workspace.iter_files()):
        if i >= 500:
            break
        files.append(rel)
    return {
        "role": ctx.role, "action": ctx.cmd.action, "task_id": ctx.cmd.task_id, "inputs": ctx.cmd.inputs,
        "expected_outputs": [{"path": o.path, "required": o.required} for o in ctx.cmd.expected_outputs],
        "workspace": {"files": files},
    }


class PlanHostAdapter:
    """What a plan may ask of the parent process: nested model calls, progress and logs."""

    def __init__(self, ctx: CommandContext) -> None:
        self.ctx = ctx

    def call_llm(self, prompt: str, opts: dict[str, Any]) -> str:
        from agent.prompt import summarize

        model = self.ctx.require_model()
        text = summarize(prompt, self.ctx.settings.budget.total_bytes)
        messages = []
        if isinstance(opts.get("system"), str):
            messages.append({"role": "system", "content": opts["system"]})
        messages.append({"role": "user", "content": text})
        reply = model.complete(ModelRequest(messages=messages, task_type="nested", role=self.ctx.role,
                                            deadline=self.ctx.deadline))
        return reply.text

    def progress(self, message: str) -> None:
        self.ctx.progress(message, stage="implementing", progress=0.5)

    def log(self, message: str) -> None:
        self.ctx.audit.record("plan_log", task_id=self.ctx.cmd.task_id, message=message)

    def run_tests(self, timeout_s: float) -> dict[str, Any]:
        """`tools.test()`: the configured test command, inside the OS sandbox, output tail only."""
        from agent.roles.testrun import run_tests

        command = self.ctx.settings.test_command
        if not command:
            return {"error": "no test command configured (--test-command)", "code": "not_configured"}
        timeout = min(timeout_s, self.ctx.settings.test_timeout_s, max(0.0, self.ctx.seconds_left()))
        result = run_tests(command, str(self.ctx.workspace.root), timeout)
        self.ctx.audit.record("plan_tests_ran", task_id=self.ctx.cmd.task_id, status=result.get("status"),
                              exit_code=result.get("exit_code"))
        return result
