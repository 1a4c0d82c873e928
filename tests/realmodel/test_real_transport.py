"""The model transport against llama.cpp itself: probe, streaming, grammar, response_format, cut-offs.

Opt-in: `python -m pytest -m realmodel tests/realmodel/test_real_transport.py`. Short prompts and a
handful of tokens each, so the whole file takes seconds even on one shared core.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agent.models.base import ModelRequest
from agent.models.openai_http import OpenAIChatModel
from agent.models.probe import clear_capabilities_cache

pytestmark = pytest.mark.realmodel
QUESTION = [{"role": "user", "content": "Is the sky blue? Answer yes or no."}]


@pytest.fixture
def client(real_model: Any) -> Any:
    clear_capabilities_cache()
    c = OpenAIChatModel(real_model.base_url, real_model.model, probe=True, timeout_s=120, stall_s=60)
    yield c
    c.close()


def test_llama_cpp_is_recognised_with_grammar_support(client: OpenAIChatModel) -> None:
    caps = client.capabilities()
    assert (caps.server, caps.streaming, caps.json_schema, caps.grammar) == ("llama.cpp", True, True, True)


def test_grammar_constrains_a_streamed_answer(client: OpenAIChatModel) -> None:
    reply = client.complete(ModelRequest(messages=QUESTION, grammar='root ::= "yes" | "no"', max_tokens=8,
                                         temperature=0))
    assert reply.text in ("yes", "no") and reply.finish_reason == "stop"
    assert reply.usage.prompt_tokens > 0 and not reply.usage.estimated  # usage from the final chunk


def test_response_format_constrains_a_streamed_answer(client: OpenAIChatModel) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
              "required": ["answer"]}
    reply = client.complete(ModelRequest(messages=QUESTION, response_schema=schema, max_tokens=48, temperature=0))
    assert orjson.loads(reply.text)["answer"] in ("yes", "no")


def test_a_cut_off_answer_reports_length(client: OpenAIChatModel) -> None:
    reply = client.complete(ModelRequest(messages=[{"role": "user", "content": "Count from 1 to 100."}],
                                         max_tokens=12, temperature=0))
    assert reply.finish_reason == "length" and reply.truncated and reply.usage.completion_tokens == 12
