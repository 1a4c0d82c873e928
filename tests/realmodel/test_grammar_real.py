"""The plan grammar on a real llama.cpp server (opt-in: `python -m pytest -m realmodel tests/realmodel`).

What is asserted is the grammar's contract, not the model's skill: llama.cpp parses the grammar
(HTTP 200, not "failed to parse grammar"); every reply is text of the grammar (complete, or a
prefix when the model ran out of tokens); a complete reply is a plan that Lua 5.4 compiles and
the lint finds no forbidden name in. Undeclared names (a lint `plan_invalid`) remain possible: the
grammar cannot see declarations, and the lint stays the final word.

Serve another GGUF with LUALLM_REALMODEL_GGUF (e.g. Qwen2.5-Coder-0.5B, docs/real-model.md).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import httpx
import pytest
from gbnf_matcher import parse_gbnf

from agent.answering.conversation import system_prompt
from agent.errors import PlanInvalid
from agent.plans.extract import find_lua_plan
from agent.plans.grammar import plan_grammar
from agent.plans.lint import check_plan
from agent.plans.tools import plan_tools_for

pytestmark = pytest.mark.realmodel

MAX_TOKENS = int(os.environ.get("LUALLM_GRAMMAR_MAX_TOKENS", "900"))
TASKS = {
    "builder": "Task: add a function subtract(a, b) to calc.py that returns a - b, and a test for it in "
               "tests/test_calc.py. Workspace files: calc.py, tests/test_calc.py. Answer with a Lua plan.",
    "reviewer": "Review the change: calc.py must define subtract(a, b) and export it in __all__. "
                "Workspace files: calc.py, tests/test_calc.py. Answer with a Lua plan.",
    "spec_maintainer": "Task T-001 (subtract) is done. Update the Status section of SPEC.md. Answer with a Lua plan.",
    "orchestration": "Candidates: PLAN.md (score 0.82), SPEC.md (score 0.41). Choose the plan file and list its "
                     "tasks. Answer with a Lua plan.",
}


def _ask(server: Any, role: str, grammar: str) -> dict[str, Any]:
    body = {"model": server.model, "max_tokens": MAX_TOKENS, "temperature": 0.2, "seed": 7, "grammar": grammar,
            "messages": [{"role": "system", "content": system_prompt(role)},
                         {"role": "user", "content": TASKS[role]}]}
    resp = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=1200.0)
    assert resp.status_code == 200, resp.text[:2000]   # llama.cpp parsed the grammar
    return dict(resp.json())


@pytest.mark.parametrize("role", list(TASKS))
def test_grammar_constrained_reply_is_a_compiling_plan(real_model: Any, role: str) -> None:
    grammar = plan_grammar(role, plan_tools_for(role))
    data = _ask(real_model, role, grammar)
    choice = data["choices"][0]
    reply = choice["message"]["content"] or ""
    stopped_at = parse_gbnf(grammar).failure(reply)
    sys.stderr.write(f"\n[{role}] finish={choice['finish_reason']} usage={data.get('usage')}\n{reply}\n")
    if choice["finish_reason"] == "length":
        assert stopped_at == len(reply), f"not a prefix of the grammar at {stopped_at}: {reply[:stopped_at + 1]!r}"
        pytest.skip(f"the model used all {MAX_TOKENS} tokens; the prefix follows the grammar")
    assert stopped_at is None, f"not the grammar's text at {stopped_at}: {reply[:(stopped_at or 0) + 1]!r}"
    source = find_lua_plan(reply)
    assert source is not None
    try:
        check_plan(source)                # lupa's load, then the lint
        sys.stderr.write(f"[{role}] check_plan: ok\n")
    except PlanInvalid as exc:
        sys.stderr.write(f"[{role}] check_plan: {exc.code}: {exc}\n")
        # what the grammar cannot see: declarations, and tools reached through a variable
        assert str(exc).startswith(("unknown global", "unknown tool")), exc
