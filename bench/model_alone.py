"""The model alone: the baseline every agent figure is measured against.

About a hundred lines around the bare model, in the protocol of Aider's code-editing benchmark:
one prompt with the goal and the project's files (the spec among them), asking for each changed
file whole in a fenced block under its path; the files are written, the test command runs, and on
failure the model gets one more try with the test output. No repair, no grammar, no schema: what a
developer would write in ten minutes. Kept small and obviously fair on purpose; do not tune it.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

SYSTEM = "You are an expert software developer. You change code so that the task is done and the tests pass."
ASK = ("Reply with every file you change or create: its path on a line of its own, then the whole new content "
       "of the file in a fenced code block. Do not change the tests.")
# a path line (optionally in backticks or bold, or after "File:"), then a fenced block
BLOCK = re.compile(r"^[*`#\s]*(?:File:\s*)?([\w./-]+\.\w+)[*`:\s]*\n```[^\n]*\n(.*?)^```", re.M | re.S)
SKIP_DIRS = {".git", "__pycache__", "events", "receipts", "logs", "snapshots", "state", "transcripts", "reviews",
             "spec_notes", "planning"}


def project_files(ws: Path) -> dict[str, str]:
    files = {}
    for p in sorted(ws.rglob("*")):
        rel = p.relative_to(ws)
        if p.is_file() and not SKIP_DIRS & set(rel.parts[:-1]) and p.name != "lorch.json" and p.stat().st_size < 20000:
            try:
                files[str(rel)] = p.read_text()
            except UnicodeDecodeError:
                continue
    return files


class TimedOut(Exception):
    """The call ran past its time; `usage` is what it spent as far as it came."""

    def __init__(self, usage: dict[str, int]) -> None:
        super().__init__("timed out")
        self.usage = usage


def chat(base_url: str, model: str, messages: list[dict[str, str]], timeout: float) -> dict[str, Any]:
    """One streamed call, so that a call that runs past `timeout` still counts the tokens it spent (its
    chunks, and the prompt at four characters a token: the agent's own rule where a server reports none)."""
    body = json.dumps({"model": model, "messages": messages, "temperature": 0, "max_tokens": 2048, "stream": True,
                       "stream_options": {"include_usage": True}}).encode()
    req = urllib.request.Request(base_url + "/chat/completions", body, {"Content-Type": "application/json"})
    deadline = time.monotonic() + timeout
    text, chunks, usage = [], 0, None
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (the bench's own loopback server)
            for line in resp:
                if time.monotonic() > deadline:
                    raise TimeoutError
                if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                    continue
                event = json.loads(line[6:])
                usage = event.get("usage") or usage
                for choice in event.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        text.append(piece)
                        chunks += 1
    except TimeoutError:
        raise TimedOut({"prompt_tokens": len(json.dumps(messages)) // 4, "completion_tokens": chunks}) from None
    return {"choices": [{"message": {"content": "".join(text)}}], "usage": usage or {}}


def run_tests(command: str, ws: Path) -> tuple[bool, str]:
    try:
        p = subprocess.run(["/bin/sh", "-c", command], cwd=ws, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False, "the tests timed out after 120 s"
    return p.returncode == 0, (p.stdout + p.stderr)[-3000:]


def solve(goal: str, test_command: str, ws: Path, base_url: str, model: str, *, tries: int = 2,
          timeout: float = 600.0) -> dict[str, Any]:
    """Work on `ws` in place; return what happened (passed, the round it passed in, calls, tokens, malformed)."""
    started = time.monotonic()
    shown = "".join(f"{path}\n```\n{text}```\n\n" for path, text in project_files(ws).items())
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"Task: {goal}\n\nThe project's files:\n\n{shown}{ASK}"}]
    out: dict[str, Any] = {"passed": False, "passed_round": None, "calls": 0, "tokens_in": 0, "tokens_out": 0,
                           "malformed": 0, "errors": []}
    for round_no in range(1, tries + 1):
        try:
            reply = chat(base_url, model, messages, max(10.0, timeout - (time.monotonic() - started)))
        except TimedOut as exc:
            out["errors"].append(str(exc))
            out["calls"] += 1
            out["tokens_in"] += exc.usage["prompt_tokens"]
            out["tokens_out"] += exc.usage["completion_tokens"]
            break
        except (OSError, ValueError) as exc:
            out["errors"].append(str(exc)[:200])
            break
        out["calls"] += 1
        out["tokens_in"] += int((reply.get("usage") or {}).get("prompt_tokens") or 0)
        out["tokens_out"] += int((reply.get("usage") or {}).get("completion_tokens") or 0)
        text = reply["choices"][0]["message"]["content"] or ""
        written = 0
        for path, content in BLOCK.findall(text):
            target = (ws / path).resolve()
            if target.is_relative_to(ws.resolve()) and ".." not in Path(path).parts:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content)
                written += 1
        out["malformed"] += int(written == 0)
        passed, output = run_tests(test_command, ws)
        if passed:
            out.update(passed=True, passed_round=round_no)
            break
        messages += [{"role": "assistant", "content": text},
                     {"role": "user", "content": f"The tests failed:\n```\n{output}\n```\nFix the code. {ASK}"}]
    out["seconds"] = round(time.monotonic() - started, 1)
    return out
