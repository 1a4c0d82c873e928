"""Asking the model for a task graph (seed 000 §5.2), and for a replacement of a failed node.

The prompt holds the request, the promoted skills, the running models, the node contract and a
worked example. A graph that fails validation is sent back with the exact problems, up to
`limits.max_plan_retries` more times; each failure is audited `graph_validation_failed`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agent.errors import TaskGraphInvalid
from agent.supervised.graph import parse_graph, validate_graph

__all__ = ["graph_prompt", "node_prompt", "parse_and_validate", "CONTRACT"]

CONTRACT = """Answer with ONE JSON object: {"nodes": [NODE, ...]}. Each NODE has:
  "id": short string, unique; "action": "llm_call" | "plan" | "skill" | "decision";
  "depends_on": [ids that must complete first];
  optional "reads": [paths], "writes": [paths], "network": [urls], "max_retries": n.
llm_call: "prompt_template" (may use {node_ID_result} of nodes it depends on), optional "model";
  with "writes": ["one/path"] the reply is written to that file.
plan: "source": a Lua plan `function run(ctx) ... return value end`; read-only tools (tools.read,
  tools.list, tools.glob, tools.grep); return {files = {["path"] = "text"}} to write files (declare
  each in "writes").
skill: "skill_name", "skill_args" (object), "skill_source": "allowed" (must exist) or "draft"
  with "skill_spec" (what it must do).
decision: "condition" (may use {node_ID_result}), "if_true": id, "if_false": id.
Paths are relative to the workspace. No prose outside the JSON."""

EXAMPLE = {"nodes": [
    {"id": "1", "action": "plan", "depends_on": [], "reads": ["data.csv"],
     "source": "function run(ctx)\n  return tools.read('data.csv')\nend"},
    {"id": "2", "action": "llm_call", "depends_on": ["1"], "prompt_template": "Summarise:\n{node_1_result}"},
    {"id": "3", "action": "llm_call", "depends_on": ["2"], "writes": ["summary.md"],
     "prompt_template": "Format as Markdown:\n{node_2_result}"}]}


def graph_prompt(request: str, skills: list[str], models: list[str], errors: list[str]) -> str:
    parts = [f"You plan a task as a graph of steps.\n\nRequest:\n{request}",
             f"Skills in skills/allowed/: {', '.join(skills) or 'none'}",
             f"Running models: {', '.join(models) or 'unknown'}",
             CONTRACT, "Example:\n" + json.dumps(EXAMPLE, indent=1)]
    if errors:
        parts.append("Your previous graph was rejected. Fix exactly these problems:\n- " + "\n- ".join(errors))
    return "\n\n".join(parts)


def node_prompt(request: str, node: dict[str, Any], error: str, others: list[str]) -> str:
    shown = {k: v for k, v in node.items() if k not in ("status", "retries", "result", "error", "effects",
                                                         "elapsed_s", "computed")}
    return "\n\n".join([
        f"A step of the task below failed after all its retries. Propose ONE replacement node.\n\nTask:\n{request}",
        "Failed node:\n" + json.dumps(shown, indent=1), f"Its last error:\n{error}",
        f"Other node ids: {', '.join(others)}. Keep the same id and depends_on.",
        CONTRACT.replace('{"nodes": [NODE, ...]}', '{"nodes": [NODE]} with exactly one NODE')])


def parse_and_validate(text: str, *, skill_exists: Callable[[str], bool], check_path: Callable[[str, bool], None],
                       max_retries: int) -> list[dict[str, Any]]:
    data = parse_graph(text)
    try:
        return validate_graph(data, skill_exists=skill_exists, check_path=check_path, max_retries=max_retries)
    except TaskGraphInvalid:
        raise
