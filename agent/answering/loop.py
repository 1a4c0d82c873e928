"""Getting a valid answer from the model: JSON answer, Lua plan, or strict action list.

The harness, not the model, controls the loop (seed 002):

* the first request uses the form chosen for this model and role (`agent.answering.answer_form`);
* an invalid answer (a plan that failed included) goes back with the exact error and what a
  failed plan already wrote — a bounded number of times;
* a repair never resends an identical request: each named strategy (strategies.py) changes what
  is asked next — less after a timeout, a wider temperature after the same error twice, ...;
* after the budget, a role may salvage the last answer by dropping what failed its rules;
* an action list is executed and its results are sent back for the final answer, also bounded.
"""

from __future__ import annotations

from typing import Any

from agent.answering.answer_form import AnswerForm, choose_form
from agent.answering.answer_spec import (
    Answer,
    AnswerSpec,
    extract_json,
    role_rules,
    schema_of,
    strings_in,
    validate,
)
from agent.answering.interpret import ToolRound, interpret, plans_module
from agent.answering.sameness import looping, same_error_key, same_text
from agent.answering.strategies import applied, enabled
from agent.command_context import CommandContext
from agent.errors import (
    AgentError,
    ForbiddenSpecEdit,
    InvalidAnswer,
    InvalidModelResponse,
    ModelTimeout,
    PathRejected,
    PlanError,
    PlanFileMissing,
    SecretInArtifact,
)
from agent.models.base import ModelRequest

__all__ = ["AnswerSpec", "Answer", "InvalidAnswer", "obtain_answer", "extract_json", "build_request", "strings_in"]

_REJECTED_KEEP = 1500
_PLAN_KEEP = 6000
_MIN_MAX_TOKENS = 256
# After the same error or the same answer twice, the next request samples more widely: at the
# default 0.2 a small model may give the identical broken file on every repair.
_WIDER_TEMPERATURE = 0.8
_BRIEF = "Be brief: only the answer, no explanations; short summaries."


# Errors worth sending back to the model with their exact message.
_REPAIRABLE = (InvalidAnswer, PlanError, ForbiddenSpecEdit, PlanFileMissing, PathRejected, SecretInArtifact)


def build_request(ctx: CommandContext, spec: AnswerSpec, messages: list[dict[str, str]], form: AnswerForm,
                  max_tokens: int | None, first: bool, temperature: float | None = None) -> ModelRequest:
    """The model request for one attempt: the form decides response_format or grammar."""
    extra: dict[str, Any] = {"temperature": temperature} if temperature is not None else {}
    grammar = form.grammar if form.lua else None
    return ModelRequest(messages=list(messages), task_type=spec.task_type if first else "plan_repair",
                        role=spec.role, deadline=ctx.deadline,
                        response_schema=schema_of(spec) if form.schema else None,
                        max_tokens=max_tokens, schema_name=f"{spec.role}_answer", grammar=grammar,
                        stop_loops=enabled(ctx, "stop_looping_reply"), **extra)


class _Loop:
    """State of one command's asking: the form, the conversation, what was rejected so far."""

    def __init__(self, ctx: CommandContext, spec: AnswerSpec, user: str) -> None:
        from agent.answering.conversation import HELD_JSON, messages_for

        self.ctx = ctx
        self.spec = spec
        self.form = choose_form(ctx.settings.answers, ctx.model, spec.role, spec.task_type)
        ctx.audit.record("answer_form", task_id=ctx.cmd.task_id, role=spec.role, form=self.form.name,
                         schema=self.form.schema, grammar=self.form.grammar is not None, reason=self.form.reason)
        held = self.form.name == "json" and self.form.schema  # the server keeps the answer to its schema
        self.messages = messages_for(ctx, user, HELD_JSON if held else self.form.name)
        self.max_tokens: int | None = ctx.settings.max_tokens
        self.rejected: list[str] = []
        self.errors: list[str] = []
        self.candidate: Answer | None = None  # last schema-valid answer that failed the role's rules
        self.last: AgentError | None = None
        self.temperature: float | None = None  # None: the model layer's default

    def start_over(self, message: str) -> None:
        """The conversation again from the task alone, told `message`: without the worked example
        and without the rejected answers, which a small model copies into every later answer
        (the example's `old` text and code, then its own copies of them)."""
        from agent.answering.conversation import without_example

        kept = without_example(self.messages)
        task = next(m for m in kept if m["role"] == "user")
        self.messages = [kept[0], {"role": "user", "content": f"{task['content']}\n\n{message}"}]

    def cap_tokens(self) -> None:
        """Half the max_tokens of the last request (the role's default when none was set), never below 256."""
        from agent.models.limits import default_max_tokens

        current = self.max_tokens or default_max_tokens(self.spec.role, self.spec.task_type)
        self.max_tokens = max(_MIN_MAX_TOKENS, current // 2)


def obtain_answer(ctx: CommandContext, spec: AnswerSpec, user: str) -> Answer:
    """Ask the model until a valid answer arrives or the repair budget runs out."""
    model = ctx.require_model()
    loop = _Loop(ctx, spec, user)
    tool_rounds = 0
    attempt = 0
    while True:
        attempt += 1
        ctx.check_deadline()
        request = build_request(ctx, spec, loop.messages, loop.form, loop.max_tokens, attempt == 1, loop.temperature)
        try:
            reply = model.complete(request)
        except ModelTimeout as exc:
            ctx.audit.record("answer_timeout", task_id=ctx.cmd.task_id, attempt=attempt, max_tokens=loop.max_tokens,
                             error=exc.message)
            if attempt > ctx.settings.max_repairs:
                raise
            continue  # asked again as it was: the timeout may be the server's, not the question's
        cut_off = getattr(reply, "finish_reason", None) in ("length", "repetition")
        if getattr(reply, "finish_reason", None) == "repetition":
            applied(ctx, "stop_looping_reply", attempt=attempt)
        ctx.log("info", "model answered", model=reply.model, attempt=attempt, chars=len(reply.text),
                **({"cut_off": True} if cut_off else {}))
        try:
            answer = interpret(ctx, spec, reply.text, attempt)
            answer.form = loop.form.name
            try:
                role_rules(ctx, spec, answer.data)
            except _REPAIRABLE:
                loop.candidate = answer
                raise
        except ToolRound as round_:
            tool_rounds += 1
            if tool_rounds > ctx.settings.max_tool_rounds:
                raise InvalidModelResponse(
                    f"the model kept sending action lists ({tool_rounds}) without a final answer") from None
            loop.messages += [{"role": "assistant", "content": reply.text},
                              {"role": "user", "content": "Tool results:\n" + round_.results +
                               "\n\nNow reply with the final answer."}]
            attempt -= 1  # a tool round is progress, not a failed attempt
            continue
        except _REPAIRABLE as exc:
            if not _after_rejection(ctx, loop, exc, reply.text, attempt, cut_off):
                break
            continue
        ctx.log("info", "answer validated", via=answer.via, attempts=attempt)
        return answer
    salvaged = _salvage(ctx, spec, loop, attempt)
    if salvaged is not None:
        return salvaged
    last = loop.last
    assert last is not None
    if isinstance(last, PlanError | ForbiddenSpecEdit | PlanFileMissing | PathRejected | SecretInArtifact):
        raise last
    raise InvalidModelResponse(f"no valid answer after {attempt} attempts; last error: {last.message}",
                               attempts=attempt)


def _after_rejection(ctx: CommandContext, loop: _Loop, exc: AgentError, text: str, attempt: int,
                     cut_off: bool) -> bool:
    """What follows a rejected reply: True to ask again (with the repair message or a fresh start set
    up in `loop`), False to give up (the budget spent, or the same invalid answer twice)."""
    loop.last = exc
    ctx.audit.record("answer_rejected", task_id=ctx.cmd.task_id, attempt=attempt, code=exc.code,
                     error=exc.message, cut_off=cut_off)
    repeated = same_text(text) in loop.rejected
    same_error = same_error_key(exc.message) in loop.errors
    if (repeated or same_error) and loop.temperature is None and enabled(ctx, "wider_temperature"):
        loop.temperature = _WIDER_TEMPERATURE
        applied(ctx, "wider_temperature", attempt=attempt)
        ctx.audit.record("answer_temperature", task_id=ctx.cmd.task_id, attempt=attempt,
                         temperature=loop.temperature, reason="the same answer" if repeated else "the same error")
    loop.rejected.append(same_text(text))
    loop.errors.append(same_error_key(exc.message))
    if attempt > ctx.settings.max_repairs:
        return False
    looped = cut_off and looping(text)
    message = _repair_message(exc, cut_off)
    if looped:
        loop.cap_tokens()  # a loop runs to any limit: the next one ends sooner, the run within bounds
        ctx.audit.record("answer_looping", task_id=ctx.cmd.task_id, attempt=attempt, max_tokens=loop.max_tokens)
        message += "\nYour answer repeated itself until it was cut off. " + _BRIEF
    if looped and enabled(ctx, "restart_after_loop"):
        # Shown its own loop, a model at temperature 0 copies it and loops again at the same
        # place: it is asked the question afresh, told that its answer looped.
        applied(ctx, "restart_after_loop", attempt=attempt)
        loop.start_over(message)
        return True
    if repeated:
        # The same invalid answer twice: a third identical question would get it again.
        ctx.audit.record("answer_repeated", task_id=ctx.cmd.task_id, attempt=attempt, code=exc.code)
        return False
    # Only the start of the rejected reply goes back: the error is what helps, and a
    # small model's context fills up fast when every repair resends a whole answer.
    loop.messages += [{"role": "assistant", "content": _clip(text)},
                      {"role": "user", "content": message}]
    return True


def _salvage(ctx: CommandContext, spec: AnswerSpec, loop: _Loop, attempt: int) -> Answer | None:
    """The last schema-valid answer without what failed the role's rules, if that is valid."""
    if spec.salvage is None or loop.candidate is None or not enabled(ctx, "salvage"):
        return None
    data = spec.salvage(loop.candidate.data)
    if data is None:
        return None
    try:
        data = validate(spec, data)
        role_rules(ctx, spec, data)
    except _REPAIRABLE as exc:
        ctx.audit.record("answer_salvage_failed", task_id=ctx.cmd.task_id, code=exc.code, error=exc.message)
        return None
    applied(ctx, "salvage", attempt=attempt)
    ctx.log("info", "answer validated", via=loop.candidate.via, attempts=attempt, salvaged=True)
    return Answer(data, loop.candidate.via, attempt, plan=loop.candidate.plan, form=loop.form.name, salvaged=True)


def _clip(text: str) -> str:
    """The rejected reply as the next request shows it. A plan of up to _PLAN_KEEP characters is shown
    whole, without the prose around it: a model repairs by copying its last answer, clip mark
    included; a mark inside a long string would leave the string unclosed and the reply would run
    on to its token limit."""
    source = plans_module().find_lua_plan(text)
    if source is not None and len(source) <= _PLAN_KEEP:
        return f"```lua\n{source}\n```"
    if len(text) <= _REJECTED_KEEP:
        return text
    return f"{text[:_REJECTED_KEEP]}\n[… {len(text) - _REJECTED_KEEP} more characters of the rejected answer omitted …]"


def _repair_message(exc: AgentError, cut_off: bool) -> str:
    lines = [f"Your answer was rejected ({exc.code}): {exc.message}"]
    if isinstance(exc, PlanError):
        failed = exc.details.get("failed_tools")
        if failed:
            lines.append("Tool calls that failed: " + "; ".join(failed))
        wrote = exc.details.get("wrote")
        if wrote:
            lines.append(f"Before it failed, your plan wrote: {', '.join(wrote)} (these files stay written; "
                         "do not redo them, only finish the rest).")
    if cut_off:
        lines.append(f"Your answer was cut off at the token limit. {_BRIEF}")
    lines.append("Reply again with a corrected, complete answer.")
    return "\n".join(lines)


