"""A reviewer's or spec maintainer's verdict and the code it was given on.

lorch asks for a review and a spec update again after every `implement_changes`. When the builder's
round kept the code as it was, the question is the one already answered: a model asked again
samples a new answer, and a small one flips (approved, then changes requested, on the same code),
each flip a round of the loop until its limit fails a run whose tests pass. The roles look up their
last verdict here, and where the code is the same, keep to it (`agent/answering/strategies.py`).
A record carries the receipts' MAC (`agent/receipt_key.py`): where the OS boundary cannot make the
agent's directory read-only to commands, one the agent did not write is ignored, not obeyed.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from agent.command_context import CommandContext
from agent.errors import AgentError
from agent.pathpolicy import AGENT
from agent.receipt_key import load_key
from agent.roles.prompting import read_project_text
from agent.roles.task_files import builder_files, load_json
from agent.workspace import AGENT_DIR, sanitize_id

__all__ = ["code_digest", "record_verdict", "verdict_on_same_code"]


def _verdict_file(ctx: CommandContext, role: str) -> str:
    return f"{AGENT_DIR}/verdicts/{sanitize_id(ctx.cmd.task_id)}-{role}.json"


def _normalised(text: str | None) -> str:
    # Trailing blanks and blank last lines are how a file given back "as it was" most often differs.
    if text is None:
        return "\0deleted"
    return "\n".join(line.rstrip() for line in text.splitlines()).rstrip("\n")


def code_digest(ctx: CommandContext) -> str | None:
    """A digest of the files the builder wrote for this task as they are now; None when none are known."""
    files = builder_files(ctx)
    if not files:
        return None
    h = hashlib.sha256()
    for rel in files:
        h.update(orjson.dumps([rel, _normalised(read_project_text(ctx, rel))]))
    return "sha256:" + h.hexdigest()


def record_verdict(ctx: CommandContext, role: str, status: str, round_no: int) -> None:
    """Keep `status` with the code it was given on (the agent's own file, not an artifact)."""
    digest = code_digest(ctx)
    if digest is None:
        return
    record: dict[str, object] = {"status": status, "round": round_no, "code": digest,
                                 "idempotency_key": ctx.cmd.idempotency_key}
    record["mac"] = load_key(ctx.workspace.root).mac(record)
    try:
        ctx.workspace.write_atomic(_verdict_file(ctx, role), orjson.dumps(record), policy=AGENT)
    except (AgentError, OSError) as exc:
        ctx.audit.record("verdict_record_failed", task_id=ctx.cmd.task_id, role=role, error=str(exc))


def verdict_on_same_code(ctx: CommandContext, role: str) -> dict[str, Any] | None:
    """This loop's last verdict of `role` (`{status, round}`) when the builder's files are as they were
    then; None in another loop (lorch gives each run its own key), or when the code changed."""
    record = load_json(ctx, _verdict_file(ctx, role))
    if not isinstance(record, dict) or record.get("idempotency_key") != ctx.cmd.idempotency_key \
            or not load_key(ctx.workspace.root).verify(record):
        return None
    digest = code_digest(ctx)
    if digest is None or record.get("code") != digest:
        return None
    return {"status": record.get("status"), "round": record.get("round")}
