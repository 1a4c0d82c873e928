"""What a reply says, in whichever form it came: a Lua plan (run in its worker, the files it wrote
announced), a strict action list (run, its results sent back as a tool round), or a JSON answer."""

from __future__ import annotations

from typing import Any

import orjson

from agent.answering.answer_spec import Answer, AnswerSpec, extract_json, validate
from agent.command_context import CommandContext
from agent.errors import AgentError, PlanError
from agent.models.base import ModelRequest
from agent.plans.tools import plan_tools_for

__all__ = ["ToolRound", "interpret", "plan_limits_for", "plan_context", "PlanHostAdapter", "plans_module"]


def plans_module() -> Any:
    import agent.plans as plans  # lazy: lupa is only needed when a plan arrives

    return plans



class ToolRound(Exception):
    """An action list ran: its results go back to the model, which still owes the final answer."""

    def __init__(self, results: str) -> None:
        super().__init__("tool round")
        self.results = results


def interpret(ctx: CommandContext, spec: AnswerSpec, text: str, attempt: int) -> Answer:
    plans = plans_module()
    source = plans.find_lua_plan(text)
    if source is not None:
        try:
            outcome = plans.run_plan(source, {**plan_context(ctx), **(spec.plan_context or {})}, workspace=ctx.workspace,
                                     limits=plan_limits_for(ctx), host=PlanHostAdapter(ctx),
                                     audit=ctx.audit, deadline=ctx.deadline)
        except PlanError as exc:
            _report_failed_plan(ctx, exc)
            raise
        for art in outcome.artifacts:
            ctx.add_artifact(art)
        ctx.log("info", "plan ran", run_id=outcome.run_id, tool_calls=len(outcome.tool_calls))
        return Answer(validate(spec, outcome.result), "lua", attempt, plan=outcome)
    data = extract_json(text)
    actions = plans.parse_action_list(data)
    if actions is not None:
        outcome = plans.run_actions(actions, workspace=ctx.workspace, limits=plan_limits_for(ctx),
                                    host=PlanHostAdapter(ctx), audit=ctx.audit, deadline=ctx.deadline)
        for art in outcome.artifacts:
            ctx.add_artifact(art)
        results = orjson.dumps(outcome.result, default=str).decode()
        raise ToolRound(results[:32 * 1024])
    return Answer(validate(spec, data), "json", attempt)


def _report_failed_plan(ctx: CommandContext, exc: PlanError) -> None:
    """A plan that failed may have written files: announce them, and name them (and the tool calls
    that failed) in the error, so the repair message can say so."""
    record_path = exc.details.get("record")
    if not isinstance(record_path, str):
        return
    try:
        record = orjson.loads(ctx.workspace.read_bytes(record_path))
    except (AgentError, OSError, orjson.JSONDecodeError):
        return
    from agent.workspace import Artifact

    wrote: list[str] = []
    for art in record.get("artifacts") or []:
        try:
            artifact = Artifact(str(art["path"]), str(art["sha256"]), int(art["size"]))
        except (KeyError, TypeError, ValueError):
            continue
        ctx.add_artifact(artifact)
        wrote.append(artifact.path)
    failed = [_describe_call(c) for c in record.get("tool_calls") or [] if isinstance(c, dict) and not c.get("ok")]
    if wrote:
        exc.details["wrote"] = wrote[:20]
    if failed:
        exc.details["failed_tools"] = failed[:5]


def _describe_call(call: dict[str, Any]) -> str:
    args = call.get("args")
    shown = orjson.dumps(args, default=str).decode()[:120] if args is not None else ""
    return f"tools.{call.get('tool')}({shown}) → {str(call.get('error') or 'error')[:200]}"


def plan_limits_for(ctx: CommandContext) -> Any:
    from dataclasses import replace

    from agent.plans.limits import PlanLimits

    base = ctx.settings.plan_limits or PlanLimits()
    return replace(base, tools=plan_tools_for(ctx.role))


def plan_context(ctx: CommandContext) -> dict[str, Any]:
    """The `context` table a plan's `run(context)` receives: plain data only."""
    from agent.project_files import project_files

    return {
        "role": ctx.role, "action": ctx.cmd.action, "task_id": ctx.cmd.task_id, "inputs": ctx.cmd.inputs,
        "expected_outputs": [{"path": o.path, "required": o.required} for o in ctx.cmd.expected_outputs],
        "workspace": {"files": project_files(ctx.workspace, 500)},
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
