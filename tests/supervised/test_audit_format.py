"""One audit format: lines written by `skills test`/`draft` in a supervised home are schema-valid
entries like the task's own (the autouse fixture in conftest validates every line of every file)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from supervised_support import WORD_COUNT, World, invalid_audit_lines

from agent.skills.samples import SAMPLES_DIR


def install_sample(w: World, name: str) -> None:
    allowed = w.home / "skills" / "allowed"
    for f in (f"{name}.lua", f"{name}_test.lua"):
        shutil.copy(SAMPLES_DIR / f, allowed)
    if not (allowed / "fixtures").exists():
        shutil.copytree(SAMPLES_DIR / "fixtures", allowed / "fixtures")


def test_skills_commands_write_the_same_audit_format_as_a_task(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init()
    install_sample(w, "read_file")
    tested = w.cli("skills", "test", "read_file")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    drafted = w.cli("skills", "draft", "word_count", "--spec", "count words", "--scripted-replies",
                    str(w.replies([WORD_COUNT])))
    assert drafted.returncode == 0, drafted.stdout + drafted.stderr
    assert invalid_audit_lines(w.home) == []
    rows = w.audit()   # validates each line against the schema too
    runs = [r for r in rows if r["event"] == "skill_test_run"]
    assert runs and runs[0]["task_id"] is None and runs[0]["data"]["skill"] == "read_file"
    assert {"skill_draft", "approval_requested"} <= {r["event"] for r in rows}
    # `log` shows their details, not blanks
    shown = w.cli("log", "--tail", "0").stdout.splitlines()
    line = next(x for x in shown if "skill_test_run" in x)
    assert 'skill="read_file"' in line, line


def test_the_validator_rejects_the_old_flat_format(tmp_path: Path) -> None:
    """The check the fixture runs can fail: a flat entry without task_id/data is caught."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "audit_log.jsonl").write_text(json.dumps({"ts": "2025-01-01T00:00:00Z", "event": "skill_test_run",
                                                       "skill": "x"}) + "\n")
    assert invalid_audit_lines(tmp_path)
    (state / "audit_log.jsonl").unlink()


def test_doctor_exits_0_after_a_promotion_and_approve_id_cannot_promote(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init()
    assert w.cli("doctor").returncode == 0
    drafted = w.cli("skills", "draft", "word_count", "--spec", "count words", "--scripted-replies",
                    str(w.replies([WORD_COUNT])))
    assert drafted.returncode == 0, drafted.stdout + drafted.stderr
    [request] = json.loads(w.cli("approvals", "list", "--json").stdout)
    assert request["tier"] == "skill_promotion" and request["waiting"]
    waiting = w.cli("doctor")
    assert waiting.returncode == 2 and "1 waiting for a person" in waiting.stdout
    # approving by id is not promotion: only the person's own cp is
    refused = w.cli("approvals", "approve", request["id"])
    assert refused.returncode == 2 and "only a person's own cp" in refused.stderr
    assert not (w.home / "skills" / "allowed" / "word_count.lua").exists()
    yes = w.cli("skills", "resume", "--answer", "y")
    commands = [x for x in yes.stdout.splitlines() if x.startswith(("cp ", "chmod "))]
    assert len(commands) == 4, yes.stdout
    for cmd in commands:
        subprocess.run(cmd.split(), check=True)
    validated = w.cli("skills", "resume")
    assert validated.returncode == 0 and "approved" in validated.stdout
    assert not list((w.home / "state" / "pending_approvals").glob("*.json"))
    kept = json.loads((w.home / "state" / "approvals" / f"{request['id']}.json").read_text())
    assert kept["status"] == "approved"
    after = w.cli("doctor")
    assert after.returncode == 0, after.stdout
    assert "none waiting for a person" in after.stdout
