"""Run a skill's tests in a plan worker and turn the outcome into the §7.2 result (exit 0 / 1 / 2)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent.audit import AuditLog
from agent.errors import AgentError
from agent.plans.limits import PlanLimits
from agent.plans.runner import run_request
from agent.skills.home import DRAFT, SkillFile, SkillsHome
from agent.workspace import Workspace
from agent.workspace_write import make_private_dirs

__all__ = ["TestReport", "run_skill_tests", "skill_limits", "last_test_status", "SKILL_OUTPUT_BYTES"]

# Seed 000 §4.5: captured print/log output of one skill run.
SKILL_OUTPUT_BYTES = 10 * 1024 * 1024


@dataclass
class TestReport:
    """The structured result of one test run; `error` set means the framework itself failed (exit 2)."""

    __test__ = False  # not a pytest class

    skill: str
    tier: str
    total: int = 0
    passed: int = 0
    failed: int = 0
    results: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    output: str = ""
    output_truncated: bool = False

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return 2
        return 1 if self.failed else 0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"skill": self.skill, "total": self.total, "passed": self.passed,
                               "failed": self.failed, "results": self.results}
        if self.error is not None:
            out["error"] = self.error
        return out

    def failure_text(self, cap: int = 8000) -> str:
        """What a model needs to rework the skill: failing cases, or the framework error, and output."""
        lines = []
        if self.error is not None:
            lines.append(f"test run error ({self.error.get('code')}): {self.error.get('message')}")
        for r in self.results:
            if r.get("status") != "pass":
                lines.append(f"FAIL {r.get('name')}: {r.get('message', '')}")
        lines.append(f"{self.passed}/{self.total} passed")
        if self.output:
            lines.append("output:\n" + self.output[-2000:])
        return "\n".join(lines)[:cap]


def skill_limits(home: SkillsHome) -> PlanLimits:
    """The plan limits a skill run gets: the plan defaults with the config's wall/memory and a 10 MB output cap."""
    cfg = home.config()
    return PlanLimits(wall_s=cfg.skill_exec_timeout_s, memory_bytes=cfg.skill_memory_mb * 1024 * 1024,
                      output_bytes=SKILL_OUTPUT_BYTES)


def run_skill_tests(home: SkillsHome, name: str, tier: str = DRAFT, *, audit: AuditLog | None = None,
                    limits: PlanLimits | None = None) -> TestReport:
    """Run `<tier>/<name>_test.lua`; never raises for a failing or broken skill (see `exit_code`)."""
    report = TestReport(skill=name, tier=tier)
    try:
        skill = home.load(name, tier)
    except AgentError as exc:
        report.error = {"code": exc.code, "message": exc.message}
        return report
    if skill.test_path is None:
        report.error = {"code": "skill_not_found", "message": f"no test file {name}_test.lua in skills/{tier}/"}
        return report
    test_path = skill.test_path
    make_private_dirs(home.state_dir)
    try:
        outcome = run_request("skill_test", {"home": str(home.root), "skill": name, "tier": tier},
                              workspace=Workspace(home.state_dir), limits=limits or skill_limits(home), audit=audit,
                              record_source={"skill": name, "tier": tier})
    except AgentError as exc:
        report.error = {"code": exc.code, "message": exc.message}
        return report
    report.output = outcome.output
    report.output_truncated = outcome.output_truncated
    result = outcome.result
    if not isinstance(result, dict):
        report.error = {"code": "skill_test_incomplete", "message": "the test file did not call test.run_all()"}
        return report
    report.total = int(result.get("total", 0))
    report.passed = int(result.get("passed", 0))
    report.failed = int(result.get("failed", 0))
    report.results = list(result.get("results") or [])
    if audit is not None:
        audit.record("skill_test_run", tier=tier, **report.to_dict())
    _remember(home, report, skill.path, test_path)
    return report


_STATUS_FILE = "skill_test_status.json"


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes() if p.is_file() else b"")
    return h.hexdigest()


def _remember(home: SkillsHome, report: TestReport, skill: Path, test: Path) -> None:
    """Keep the last result per skill and tier, keyed by the files' digest (for `skills list`)."""
    status = _load_status(home)
    status[f"{report.tier}/{report.skill}"] = {"status": "pass" if report.ok else "fail",
                                               "passed": report.passed, "total": report.total,
                                               "digest": _digest(skill, test)}
    try:
        Workspace(home.state_dir).write_atomic(_STATUS_FILE, orjson.dumps(status, option=orjson.OPT_INDENT_2))
    except (AgentError, OSError):
        pass


def _load_status(home: SkillsHome) -> dict[str, Any]:
    try:
        data = orjson.loads((home.state_dir / _STATUS_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def last_test_status(home: SkillsHome, skill: SkillFile) -> str:
    """`pass`, `fail`, `untested`, or `stale` (the files changed since the last run)."""
    entry = _load_status(home).get(f"{skill.tier}/{skill.name}")
    if not isinstance(entry, dict):
        return "untested"
    if skill.test_path is None or entry.get("digest") != _digest(skill.path, skill.test_path):
        return "stale"
    return str(entry.get("status"))
