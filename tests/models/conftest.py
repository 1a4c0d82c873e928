"""Shared fixtures for the model-layer tests: an inspectable audit log and reply builders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent.audit import AuditLog
from agent.models.luallm import clear_help_cache
from agent.models.probe import clear_capabilities_cache
from agent.redact import Redactor


class AuditProbe:
    """A real AuditLog writing to a temp file, with helpers to read events back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # A redactor that knows no secrets: anything secret found in the file leaked by construction.
        self.log = AuditLog(path, Redactor({}), stderr=False)

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        rows = [orjson.loads(line) for line in self.path.read_bytes().splitlines() if line.strip()]
        return [r for r in rows if name is None or r["event"] == name]

    def raw(self) -> str:
        return self.path.read_text() if self.path.exists() else ""


@pytest.fixture
def audit(tmp_path: Path) -> AuditProbe:
    return AuditProbe(tmp_path / "audit.jsonl")


@pytest.fixture(autouse=True)
def _fresh_help_cache() -> None:
    clear_help_cache()
    clear_capabilities_cache()


def completion_body(text: str, prompt_tokens: int = 11, completion_tokens: int = 7,
                    model: str = "served-model") -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


@pytest.fixture
def completion() -> Callable[..., dict[str, Any]]:
    """Builds an OpenAI chat.completion body."""
    return completion_body


class FakeSleep:
    """Records requested sleeps and advances a fake clock instead of sleeping."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


@pytest.fixture
def fake_sleep() -> FakeSleep:
    return FakeSleep()
