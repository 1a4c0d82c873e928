"""Skill lifecycle (seed 000 §7.3–7.6) as a library API: draft → test → rework → approval request,
and validation of the copy a human promoted. The supervised `run` mode and `skills draft`/`resume`
both call this.

The agent writes only into `skills/agent/` (drafts) and `state/` (approval requests); promotion
into `skills/allowed/` is printed as commands for a person and never executed here. A request
that is answered for good (rejected, or promoted and validated) moves to `state/approvals/`.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agent.approval_archive import archive
from agent.audit import AuditLog
from agent.clock import utc_now
from agent.errors import AgentError, SkillNotFound
from agent.fences import blocks
from agent.models.base import ModelClient, ModelRequest
from agent.skills.home import ALLOWED, DRAFT, SkillsHome
from agent.skills.metadata import NAME_RE
from agent.skills.panel import promotion_commands
from agent.skills.runner import TestReport, run_skill_tests
from agent.workspace import Workspace
from agent.workspace_write import make_private_dirs

__all__ = ["SkillLifecycle", "DraftOutcome", "Validation", "split_reply"]

_PROMPTS = Path(__file__).resolve().parent / "prompts"
_APPROVAL_FILE = re.compile(r"^skill_(\d+)_[0-9a-f-]{36}\.json$")


def split_reply(text: str) -> tuple[str | None, str | None]:
    """(skill source, test source) from a model reply with ```lua fences; None for what is missing."""
    chunks = [b.body.strip() + "\n" for b in blocks(text) if b.lang in ("", "lua")]
    skill = next((c for c in chunks if c.lstrip().startswith("---@skill")), None)
    test = next((c for c in chunks if c is not skill and "luallm_test" in c), None)
    return skill, test


def _sha(path: Path) -> str | None:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


@dataclass
class DraftOutcome:
    """How a draft ended: `approval_requested` (tests green) or `failed` (retries used up)."""

    name: str
    status: str
    attempts: int
    report: TestReport
    approval_path: Path | None = None


@dataclass
class Validation:
    """Result of validating a promoted copy against its approval."""

    ok: bool
    problems: list[str]
    report: TestReport | None


class SkillLifecycle:
    """Drafts, reworks, approval requests and promotion checks for one agent home."""

    def __init__(self, home: SkillsHome, *, model: ModelClient | None = None, audit: AuditLog | None = None,
                 max_retries: int | None = None, model_timeout_s: float = 300.0) -> None:
        self.home = home
        self.model = model
        self.audit = audit
        self.max_retries = home.config().max_skill_retries if max_retries is None else max_retries
        self.model_timeout_s = model_timeout_s

    def _audit(self, event: str, **fields: Any) -> None:
        if self.audit is not None:
            self.audit.record(event, **fields)

    # -- drafting ------------------------------------------------------------------------------
    def _ask(self, name: str, user: str) -> str:
        if self.model is None:
            raise AgentError("no model configured: pass --model and --base-url, --config, --replay or --scripted-replies")
        system = (_PROMPTS / "draft.txt").read_text().replace("{name}", name)
        request = ModelRequest(messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                               task_type="skill_generation", deadline=time.time() + self.model_timeout_s)
        return self.model.complete(request).text

    def _write_draft(self, name: str, skill: str | None, test: str | None) -> None:
        make_private_dirs(self.home.draft_dir)
        ws = Workspace(self.home.draft_dir)
        if skill is not None:
            ws.write_atomic(f"{name}.lua", skill)
        if test is not None:
            ws.write_atomic(f"{name}_test.lua", test)

    def _current(self, name: str, suffix: str) -> str:
        path = self.home.draft_dir / f"{name}{suffix}.lua"
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else "(missing)"

    def draft(self, name: str, spec: str) -> DraftOutcome:
        """Draft `name` from `spec`, test it, rework on failure; request approval once green."""
        if not NAME_RE.match(name) or name.endswith("_test"):
            raise SkillNotFound(f"not a valid skill name: {name!r}", skill=name)
        attempts = 0
        user = f"Write the skill `{name}`.\n\nSpecification:\n{spec}\n"
        while True:
            attempts += 1
            skill, test = split_reply(self._ask(name, user))
            self._write_draft(name, skill, test)
            self._audit("skill_draft" if attempts == 1 else "skill_rework", skill=name, attempt=attempts,
                        skill_found=skill is not None, test_found=test is not None)
            report = run_skill_tests(self.home, name, DRAFT, audit=self.audit)
            if report.ok:
                return DraftOutcome(name, "approval_requested", attempts, report,
                                    self.request_approval(name, report, spec=spec))
            if attempts > self.max_retries:
                self._audit("skill_draft_failed", skill=name, attempts=attempts)
                return DraftOutcome(name, "failed", attempts, report)
            user = self.rework_prompt(name, spec, report)

    def rework_prompt(self, name: str, spec: str, report: TestReport) -> str:
        """REWORK: the original spec, the current code and test, and the failing output (§7.3)."""
        return (f"Your skill `{name}` does not pass its tests yet. Fix it (the skill, or the test if the "
                f"test is wrong) and reply with both files again.\n\nSpecification:\n{spec}\n\n"
                f"Current {name}.lua:\n```lua\n{self._current(name, '')}```\n\n"
                f"Current {name}_test.lua:\n```lua\n{self._current(name, '_test')}```\n\n"
                f"Test output:\n{report.failure_text()}\n")

    # -- approvals -----------------------------------------------------------------------------
    def request_approval(self, name: str, report: TestReport, *, spec: str | None = None) -> Path:
        """Write state/pending_approvals/skill_<n>_<uuid>.json with the structured results."""
        skill = self.home.load(name, DRAFT)
        make_private_dirs(self.home.approvals_dir)
        taken = [int(m.group(1)) for p in self.home.approvals_dir.iterdir() if (m := _APPROVAL_FILE.match(p.name))]
        n = max(taken, default=0) + 1
        ident = str(uuid.uuid4())
        approval: dict[str, Any] = {
            "id": ident, "n": n, "kind": "skill_promotion", "skill": name, "version": skill.meta.version,
            "description": skill.meta.description, "status": "pending", "approved": False,
            "created_at": utc_now(), "files": {"skill": str(skill.path), "test": str(skill.test_path)},
            "sha256": {"skill": _sha(skill.path), "test": _sha(skill.test_path) if skill.test_path else None},
            "paths": list(skill.meta.paths), "dependencies": list(skill.meta.dependencies),
            "commands": list(skill.meta.commands), "tests": report.to_dict(),
            "updates": self.home.skill_path(name, ALLOWED).is_file(), "spec": spec,
        }
        approval["promotion_commands"] = promotion_commands(self.home, approval)
        path = self.home.approvals_dir / f"skill_{n}_{ident}.json"
        self.save(path, approval)
        self._audit("approval_requested", skill=name, version=skill.meta.version, approval=path.name)
        return path

    def save(self, path: Path, approval: dict[str, Any]) -> None:
        Workspace(self.home.approvals_dir).write_atomic(path.name, orjson.dumps(approval, option=orjson.OPT_INDENT_2))

    def pending(self) -> list[tuple[Path, dict[str, Any]]]:
        """Approval requests not yet approved or rejected, oldest first."""
        if not self.home.approvals_dir.is_dir():
            return []
        out = []
        for path in sorted(self.home.approvals_dir.iterdir(), key=lambda p: _order(p.name)):
            if not _APPROVAL_FILE.match(path.name):
                continue
            try:
                data = orjson.loads(path.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                continue
            if isinstance(data, dict) and data.get("status") in ("pending", "awaiting_promotion"):
                out.append((path, data))
        return out

    def retest(self, path: Path, approval: dict[str, Any]) -> TestReport:
        """[R]erun tests (also after [E]dit): refresh the structured results in the request."""
        report = run_skill_tests(self.home, str(approval["skill"]), DRAFT, audit=self.audit)
        approval["tests"] = report.to_dict()
        try:
            skill = self.home.load(str(approval["skill"]), DRAFT)
            approval["version"] = skill.meta.version
            approval["sha256"]["skill"] = _sha(skill.path)
        except AgentError:
            pass
        self.save(path, approval)
        return report

    def decide(self, path: Path, approval: dict[str, Any], yes: bool) -> list[str]:
        """[Y]es: the commands to print (status awaiting_promotion); [N]o: rejected. Never runs anything."""
        approval["status"] = "awaiting_promotion" if yes else "rejected"
        approval["decided_at"] = utc_now()
        commands = promotion_commands(self.home, approval) if yes else []
        approval["promotion_commands"] = commands or approval.get("promotion_commands", [])
        if yes:
            self.save(path, approval)  # still waits: for the person's cp, then validation
        else:
            archive(path, approval)
        self._audit("approval_resolved", skill=approval["skill"], decision="yes" if yes else "no",
                    approval=path.name)
        return commands

    def promoted(self, approval: dict[str, Any]) -> bool:
        """A copy of the approved version is in allowed/ (an older version there does not count)."""
        try:
            return self.home.load(str(approval["skill"]), ALLOWED).meta.version == approval.get("version")
        except AgentError:
            return self.home.skill_path(str(approval["skill"]), ALLOWED).is_file()

    def fix(self, path: Path, approval: dict[str, Any]) -> TestReport:
        """[F]ix & retest: one REWORK round with the model, then the tests again."""
        name = str(approval["skill"])
        report = run_skill_tests(self.home, name, DRAFT, audit=self.audit)
        skill, test = split_reply(self._ask(name, self.rework_prompt(name, str(approval.get("spec") or ""), report)))
        self._write_draft(name, skill, test)
        self._audit("skill_rework", skill=name, attempt="fix")
        return self.retest(path, approval)

    def validate_promoted(self, path: Path, approval: dict[str, Any]) -> Validation:
        """§7.5: metadata parses, tests pass from allowed/, version matches; then approved: true."""
        name = str(approval["skill"])
        problems: list[str] = []
        report: TestReport | None = None
        try:
            skill = self.home.load(name, ALLOWED)
        except AgentError as exc:
            return Validation(False, [exc.message], None)
        if skill.meta.version != approval.get("version"):
            problems.append(f"version {skill.meta.version} in skills/allowed/ does not match the approved "
                            f"version {approval.get('version')}")
        else:
            report = run_skill_tests(self.home, name, ALLOWED, audit=self.audit)
            if not report.ok:
                problems.append(f"tests do not pass from skills/allowed/ ({report.passed}/{report.total}"
                                f"{', ' + str(report.error.get('message')) if report.error else ''})")
        if problems:
            self._audit("approval_validation_failed", skill=name, problems=problems, approval=path.name)
            return Validation(False, problems, report)
        approval.update(status="approved", approved=True, validated_at=utc_now())
        archive(path, approval)
        self._audit("approval_resolved", skill=name, approved=True, validated=True, approval=path.name)
        return Validation(True, [], report)


def _order(name: str) -> int:
    m = _APPROVAL_FILE.match(name)
    return int(m.group(1)) if m else 0
