"""The conversation a role's first request opens: system prompt, one worked example, the task.

The system prompt is assembled from text files (`prompts/common.txt`, the form's `form_*.txt` with
the answer schema, the role's own); the worked example is an earlier user/assistant exchange,
because a small model copies an example quoted inside the system prompt into its own answer and a
finished exchange far less. Also here: recognising a reply that copies the example instead of
doing the task.

Where the server holds the answer to its schema (form `json_held`: the schema goes as
`response_format`), the prompt names the fields in one short outline and shows no worked
example: both exist to show the form, which the decoder now keeps, and a small model copied the
example's finding into answers about other projects.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from agent.command_context import CommandContext
from agent.resources import prompt_text, schema_dir

__all__ = ["EXAMPLE_MARK", "without_example", "system_prompt",
           "compact_schema", "schema_outline", "worked_example", "first_messages", "messages_for", "HELD_JSON"]

_EXAMPLES = Path(__file__).resolve().parent.parent / "roles" / "examples"
EXAMPLE_MARK = "(A worked example, to show the form; your own task follows.)"
HELD_JSON = "json_held"  # the JSON form whose schema the server enforces


@functools.cache
def _text(name: str) -> str:
    return prompt_text(name)


def _answer_schema(role: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((schema_dir() / "answers" / f"{role}.json").read_text())
    return schema


@functools.cache
def compact_schema(role: str) -> str:
    """The role's answer schema without its bookkeeping keys, as one compact JSON line."""
    schema = _answer_schema(role)
    for key in ("$schema", "$id", "title", "description"):
        schema.pop(key, None)
    reasoning = schema.get("properties", {}).get("reasoning")
    if isinstance(reasoning, dict):
        reasoning.pop("description", None)
    return json.dumps(schema, separators=(",", ":"))


@functools.cache
def schema_outline(role: str) -> str:
    """The answer's fields, a line each (`- findings: list of {path, line?, comment}`): what the model
    needs to know before it writes, where the server holds the details."""
    schema = _answer_schema(role)
    required = set(schema.get("required", []))
    return "\n".join(f"- {name}{'' if name in required else ' (optional)'}: {_outline(prop)}"
                     for name, prop in schema.get("properties", {}).items() if name != "reasoning")


def _outline(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " or ".join(json.dumps(v) for v in prop["enum"])
    kind = prop.get("type")
    if kind == "array":
        return "list of " + _outline(prop.get("items", {}))
    if kind == "object":
        required = set(prop.get("required", []))
        return "{" + ", ".join(f"{k}{'' if k in required else '?'}: {_outline(v)}"
                               for k, v in prop.get("properties", {}).items()) + "}"
    return {"string": "text", "integer": "integer", "number": "number", "boolean": "boolean"}.get(str(kind), "value")


@functools.cache
def worked_example(role: str, action: str, form: str) -> tuple[str, str] | None:
    """The worked example for `action` as (its task, its answer in the form's language), or None.

    It goes into the first prompt as an earlier user/assistant exchange: a small model copies an
    example quoted inside the system prompt into its own answer, and a separate, finished exchange
    far less.
    """
    stem = f"{role}.{action}"
    if form == HELD_JSON or not (_EXAMPLES / f"{stem}.json").is_file():
        return None
    data = json.loads((_EXAMPLES / f"{stem}.json").read_text())
    text = data["task"]
    if form in ("plan", "grammar"):
        answer = "```lua\n" + (_EXAMPLES / f"{stem}.lua").read_text().strip("\n") + "\n```"
        text = data.get("task_plan", text)  # a plan may use what the agent ran first (`context.examples`)
    else:
        answer = json.dumps(data["answer"], ensure_ascii=False)
    task = f"{EXAMPLE_MARK}\n{text.rstrip()}\n"
    return task, answer


@functools.cache
def system_prompt(role: str, form: str = "plan") -> str:
    """The system prompt of a role's first request: who it is, how to answer in `form`, its rules."""
    from agent.plans.tools import plan_tools_for

    parts = [_text("common.txt")]
    template = _text(f"form_{form}.txt").replace("{schema}", compact_schema(role)) \
        .replace("{outline}", schema_outline(role) if form == HELD_JSON else "")
    if "{tools}" in template:
        from agent.plans import tools_prompt_text

        template = template.replace("{tools}", tools_prompt_text(plan_tools_for(role)))
    parts.append(template)
    parts.append(_text(role + ".txt"))
    return "\n".join(p.rstrip("\n") + "\n" for p in parts)


_CLOSING = {"json": "Reply now with the JSON answer for this task.",
            HELD_JSON: "Reply now with the JSON answer for this task.",
            "plan": "Reply now with the Lua plan (or the JSON answer) for this task.",
            "grammar": "Reply now with the Lua plan for this task."}


def without_example(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The conversation without the worked example's exchange (a small model that copies it verbatim)."""
    out: list[dict[str, str]] = []
    skip = False
    for m in messages:
        if m["role"] == "user" and m["content"].startswith(EXAMPLE_MARK):
            skip = True
            continue
        if skip and m["role"] == "assistant":
            skip = False
            continue
        skip = False
        out.append(m)
    return out


def first_messages(role: str, action: str, form: str, user: str) -> list[dict[str, str]]:
    """System prompt, the worked example as an earlier exchange, then the task itself."""
    messages = [{"role": "system", "content": system_prompt(role, form)}]
    example = worked_example(role, action, form)
    if example is not None:
        messages += [{"role": "user", "content": example[0]}, {"role": "assistant", "content": example[1]}]
    messages.append({"role": "user", "content": f"{user.rstrip()}\n\n{_CLOSING[form]}"})
    return messages


def messages_for(ctx: CommandContext, user: str, form: str = "plan") -> list[dict[str, str]]:
    messages = first_messages(ctx.role, ctx.cmd.action, form, user)
    skills = _skills_text(ctx)
    if skills:  # promoted skills a plan may call: only forms that can write a plan
        messages[0] = {"role": "system", "content": messages[0]["content"] + skills}
    return messages


def _skills_text(ctx: CommandContext) -> str:
    """Promoted skills and Agent Skills, when the agent runs with --skills-home (agent/skills/catalog.py)."""
    home = getattr(ctx.settings.plan_limits, "skills_home", None)
    if not home or not ctx.settings.prefer_plans:
        return ""
    from agent.skills.catalog import skills_prompt_text

    return skills_prompt_text(home, ctx.workspace.root)
