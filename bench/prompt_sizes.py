"""Measure each role's first prompt: fixed part (system prompt and the worked example) and whole.

    python bench/prompt_sizes.py                                   # estimates only (no model)
    python bench/prompt_sizes.py --tokenize http://127.0.0.1:8080  # plus the real count from a
                                                                   # llama.cpp server's /tokenize
    python bench/prompt_sizes.py --json                            # machine-readable

The prompts are the real ones: each role handles the demo's commands (fixtures/demo) in process
on a copy of the demo workspace, with a model that records the first request and stops there. The
builder's is its first round's (form "text": it asks for files as text in every answer form), the
other roles' one per answer form.
Estimates: bytes / 4 and characters / 3.5 (tokenizer-free; real BPE tokenizers land between).
The goal (issue 8): a first prompt fits an 8k-token context with room to answer, the fixed part
in at most 4k tokens.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.answering.conversation import first_messages  # noqa: E402
from agent.audit import AuditLog  # noqa: E402
from agent.command_context import CommandContext, RoleSettings  # noqa: E402
from agent.errors import AgentError, ModelError  # noqa: E402
from agent.models.base import ModelReply, ModelRequest  # noqa: E402
from agent.protocol import decode_command  # noqa: E402
from agent.redact import Redactor  # noqa: E402
from agent.roles import handler_for  # noqa: E402
from agent.workspace import Workspace  # noqa: E402

DEMO = ROOT / "fixtures" / "demo"
FORMS = ("json", "plan", "grammar")
BUILDER_FORMS = ("text",)  # the builder's rounds ask the same way whatever --answers says
REVIEW = {"task_id": "T-001", "status": "changes_requested", "summary": "subtract is not exported",
          "findings": [{"path": "calc.py", "line": 3, "comment": "add 'subtract' to __all__"}]}


class _Stop(ModelError):
    """Raised by the recording model once it has the first request."""


class FirstRequest:
    def __init__(self) -> None:
        self.request: ModelRequest | None = None

    def complete(self, request: ModelRequest) -> ModelReply:
        if self.request is None:  # the builder's rounds ask again after a failed call: the first counts
            self.request = request
        raise _Stop("first request recorded", retriable=False)

    def close(self) -> None:
        return None


def _commands() -> dict[tuple[str, str], dict[str, Any]]:
    """One demo command per (role, action); task_discovery reuses the intake's inputs."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for line in (DEMO / "commands.ndjson").read_text().splitlines():
        cmd = json.loads(line)
        out.setdefault((cmd["to"]["agent_type"], cmd["action"]), cmd)
    intake = out[("orchestration", "intake")]
    out[("orchestration", "task_discovery")] = {**intake, "action": "task_discovery",
                                                 "inputs": {**intake["inputs"], "request_more_candidates": True}}
    return out


def first_prompt(role: str, raw: dict[str, Any], form: str, ws: Path) -> list[dict[str, str]]:
    """The first request's messages for `form` (the user part does not depend on the form)."""
    model = FirstRequest()
    cmd = decode_command(raw)
    ctx = CommandContext(cmd=cmd, role=role, workspace=Workspace(ws), model=model,
                         settings=RoleSettings(answers="json" if form == "json" else "plan"),
                         audit=AuditLog(None, Redactor(), stderr=False), deadline=time.time() + 60,
                         emit=lambda *a: None, log=lambda *a, **k: None, cancelled=lambda: False)
    try:
        handler_for(role)(ctx)
    except (_Stop, AgentError):  # the builder's rounds end in their own error after failed calls
        pass
    assert model.request is not None, f"{role} sent no request"
    if role == "builder":
        return list(model.request.messages)
    task = model.request.messages[-1]["content"].rsplit("\n\n", 1)[0]  # without the form's closing line
    return first_messages(role, cmd.action, form, task)


def _tokens(url: str, text: str) -> int:
    req = urllib.request.Request(url.rstrip("/") + "/tokenize", data=json.dumps({"content": text}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return len(json.loads(resp.read())["tokens"])


def measure(tokenize: str | None = None) -> list[dict[str, Any]]:
    rows = []
    commands = _commands()
    with tempfile.TemporaryDirectory(prefix="luallm-prompt-sizes-") as tmp:
        for (role, action), raw in sorted(commands.items()):
            for form in BUILDER_FORMS if role == "builder" else FORMS:
                ws = Path(tmp) / f"{role}-{action}-{form}"
                shutil.copytree(DEMO / "workspace", ws)
                if action == "implement_changes":
                    (ws / "reviews").mkdir()
                    (ws / "reviews" / "T-001.json").write_text(json.dumps(REVIEW))
                messages = first_prompt(role, raw, form, ws)
                # The fixed part: system prompt and the worked example's exchange; then the task.
                system = "\n".join(m["content"] for m in messages[:-1])
                whole = system + "\n" + messages[-1]["content"]
                row: dict[str, Any] = {
                    "role": role, "action": action, "form": form,
                    "fixed_chars": len(system), "fixed_est_tokens": round(len(system.encode()) / 4),
                    "whole_chars": len(whole), "whole_est_tokens": round(len(whole.encode()) / 4),
                    "whole_est_tokens_3_5": round(len(whole) / 3.5),
                }
                if tokenize:
                    row["fixed_tokens"] = _tokens(tokenize, system)
                    row["whole_tokens"] = _tokens(tokenize, whole)
                rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenize", help="llama.cpp server root URL (its /tokenize endpoint), e.g. http://127.0.0.1:8080")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = measure(args.tokenize)
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
        return 0
    real = bool(args.tokenize)
    head = f"{'role':16} {'action':17} {'form':8} {'fixed chars':>11} {'~tokens':>8} {'whole chars':>11} {'~tokens':>8}"
    sys.stdout.write(head + ("  fixed tok  whole tok" if real else "") + "\n")
    for r in rows:
        line = (f"{r['role']:16} {r['action']:17} {r['form']:8} {r['fixed_chars']:>11} {r['fixed_est_tokens']:>8} "
                f"{r['whole_chars']:>11} {r['whole_est_tokens']:>8}")
        if real:
            line += f"  {r['fixed_tokens']:>9} {r['whole_tokens']:>9}"
        sys.stdout.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
