"""Prompt assembly under byte budgets, with deterministic summaries that say what was cut.

Budgets (so a big workspace cannot overflow a small model's context): a total budget for everything the prompt quotes from files (default
256 KiB) and a per-file budget (default 32 KiB). A file over budget is summarised: its Markdown
headings first, then its leading lines, then a visible marker naming what was kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PromptBudget", "PromptBuilder", "summarize"]

MARKER = "[… summarised by luallm-agent: kept {kept} of {total} bytes (headings, then leading lines) …]"


@dataclass(frozen=True)
class PromptBudget:
    total_bytes: int = 256 * 1024
    per_file_bytes: int = 32 * 1024


def _fit(lines: list[str], limit: int) -> list[str]:
    out: list[str] = []
    used = 0
    for line in lines:
        size = len(line.encode("utf-8")) + 1
        if used + size > limit:
            break
        out.append(line)
        used += size
    return out


def summarize(text: str, limit: int) -> str:
    """Deterministic summary of `text` in at most `limit` bytes (UTF-8), marker included."""
    total = len(text.encode("utf-8"))
    if total <= limit:
        return text
    marker_room = len(MARKER.format(kept=total, total=total).encode()) + 2
    room = max(0, limit - marker_room)
    lines = text.splitlines()
    headings = _fit([ln for ln in lines if ln.lstrip().startswith("#")], room // 2)
    body_room = room - sum(len(h.encode()) + 1 for h in headings)
    leading = _fit(lines, body_room)
    parts: list[str] = []
    if headings:
        parts += ["Headings:", *headings, "", "Leading lines:"]
        body_room -= sum(len(x.encode()) + 1 for x in ("Headings:", "", "Leading lines:"))
    kept_text = "\n".join([*parts, *leading]) if parts else "\n".join(leading)
    kept_text = kept_text.encode("utf-8")[:room].decode("utf-8", "ignore")
    kept = len(kept_text.encode("utf-8"))
    return f"{kept_text}\n{MARKER.format(kept=kept, total=total)}"


@dataclass
class PromptBuilder:
    """Collects prompt sections, enforcing the budgets and remembering every cut."""

    budget: PromptBudget = field(default_factory=PromptBudget)
    used: int = 0
    cuts: list[dict[str, Any]] = field(default_factory=list)
    whole: dict[str, str] = field(default_factory=dict)  # path -> text, for the files quoted in full

    def file(self, path: str, text: str) -> str:
        """A fenced file section, summarised when over the per-file or remaining total budget."""
        size = len(text.encode("utf-8"))
        remaining = self.budget.total_bytes - self.used
        limit = min(self.budget.per_file_bytes, remaining)
        if limit < 256:
            self.cuts.append({"path": path, "bytes": size, "kept": 0, "why": "total prompt budget used up"})
            return f"### {path}\n[… omitted by luallm-agent: {size} bytes, total prompt budget used up …]\n"
        body = text
        if size > limit:
            body = summarize(text, limit)
            why = "per-file budget" if limit == self.budget.per_file_bytes else "total prompt budget"
            self.cuts.append({"path": path, "bytes": size, "kept": len(body.encode("utf-8")), "why": why})
        else:
            self.whole[path] = text
        self.used += len(body.encode("utf-8"))
        return f"### {path}\n```\n{body}\n```\n"

    def cut_summary(self) -> list[dict[str, Any]]:
        return list(self.cuts)
