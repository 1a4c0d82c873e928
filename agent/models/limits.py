"""How much a model may say and how long it may go quiet: the one table of model-call limits.

`max_tokens` is sized to what each role has to answer: a builder writes files, the others write a
verdict or a short list. A request with `max_tokens=None` gets its role's default here; `--max-tokens N`
sets one value for every role. The answers layer may ask for less after a cut-off answer.

Time limits of one HTTP exchange (see `agent.models.openai_http`):

* first byte (`--model-timeout`, config `timeout_s`): connect, send, and wait for the first
  streamed byte, which for a local model includes prompt processing. No request is cut sooner.
* stall (`--model-stall-s`, config `stall_s`): once the answer streams, the longest silence
  allowed between two chunks. A stream that keeps producing is never cut by a fixed timeout; only the
  command deadline bounds it.

`max_response_bytes` (`--max-response-bytes`) caps the decoded body of any one response, counted
while it is read and decompressed, so a hostile or broken server cannot fill memory.
"""

from __future__ import annotations

__all__ = [
    "ROLE_MAX_TOKENS", "NESTED_MAX_TOKENS", "FALLBACK_MAX_TOKENS", "default_max_tokens",
    "DEFAULT_FIRST_TOKEN_S", "DEFAULT_STALL_S", "DEFAULT_MAX_RESPONSE_BYTES",
]

# A builder answer carries whole files; the other roles answer with a verdict and a few findings.
ROLE_MAX_TOKENS: dict[str, int] = {
    "builder": 3072,
    "reviewer": 1024,
    "spec_maintainer": 1024,
    "orchestration": 1024,
}
NESTED_MAX_TOKENS = 1024    # a plan's `call_llm`: a helper question inside a plan
FALLBACK_MAX_TOKENS = 2048  # a role this table does not know

DEFAULT_FIRST_TOKEN_S = 120.0
DEFAULT_STALL_S = 60.0
DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024


def default_max_tokens(role: str | None, task_type: str | None = None) -> int:
    """The `max_tokens` a request of this role (or a nested plan call) gets when none is set."""
    if task_type == "nested" or role == "nested":
        return NESTED_MAX_TOKENS
    if role is None:
        return FALLBACK_MAX_TOKENS
    return ROLE_MAX_TOKENS.get(role, FALLBACK_MAX_TOKENS)
