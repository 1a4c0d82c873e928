"""End to end, as subprocesses: samples listed and tested; a scripted model drafts a failing skill,
reworks it to green, an approval request appears, promotion is printed not run, a person promotes,
resume validates, and a plan calls the skill."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from supervised_support import WORD_COUNT
from support import ROOT

from agent.skills.samples import SAMPLES_DIR, sample_names


def _cli(*args: str, home: Path, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home.parent), "LUALLM_AGENT_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "agent", *args], input=stdin, capture_output=True, text=True,
                          env=env, cwd=cwd or home.parent, timeout=120)


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    return tmp_path / "agent-home"


def _install_samples(home: Path) -> None:
    allowed = home / "skills" / "allowed"
    allowed.mkdir(parents=True)
    for f in SAMPLES_DIR.glob("*.lua"):
        shutil.copy(f, allowed)
    shutil.copytree(SAMPLES_DIR / "fixtures", allowed / "fixtures")


def test_samples_are_listed_and_their_tests_pass(home: Path) -> None:
    _install_samples(home)
    for name in sample_names():
        proc = _cli("skills", "test", name, home=home)
        result = json.loads(proc.stdout)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert result["skill"] == name and result["failed"] == 0 and result["passed"] == result["total"] > 0
    listed = json.loads(_cli("skills", "list", "--json", home=home).stdout)
    assert sorted(r["name"] for r in listed) == sample_names()
    assert {r["source"] for r in listed} == {"allowed"} and {r["test_status"] for r in listed} == {"pass"}
    shown = _cli("skills", "show", "read_csv", home=home)
    assert shown.returncode == 0 and "public functions: run, parse_line" in shown.stdout


def test_failing_test_exits_one_with_the_json_result(home: Path) -> None:
    draft = home / "skills" / "agent"
    draft.mkdir(parents=True)
    (draft / "half.lua").write_text('---@skill { name = "half", version = "1", description = "d" }\n'
                                    "return {run = function(x) return x / 3 end}\n")
    (draft / "half_test.lua").write_text('local test = require("luallm_test")\nlocal h = require("half")\n'
                                         'test.case("halves", function() test.eq(h.run(4), 2) end)\ntest.run_all()\n')
    proc = _cli("skills", "test", "half", home=home)
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["failed"] == 1 and result["results"][0]["status"] == "fail"
    assert "expected 2, got" in result["results"][0]["message"]


BROKEN = WORD_COUNT.replace("words = n }", "words = n - 1 }")  # the draft with a bug to rework


def test_draft_rework_approval_promotion_resume_and_plan_call(home: Path, tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([BROKEN, BROKEN.replace("words = n - 1", "words = n")]))
    proc = _cli("skills", "draft", "word_count", "--spec", "count words in a file", "--scripted-replies",
                str(replies), home=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(proc.stdout.splitlines()[0])
    assert summary["status"] == "approval_requested" and summary["attempts"] == 2
    approvals = list((home / "state" / "pending_approvals").glob("skill_1_*.json"))
    assert len(approvals) == 1
    request = json.loads(approvals[0].read_text())
    assert request["tests"]["passed"] == 1 and request["status"] == "pending" and request["version"] == "1.0"
    assert "┌─ Skill Approval: word_count (v1.0)" in proc.stdout and "✅ counts words" in proc.stdout
    audit = [json.loads(line)["event"] for line in (home / "state" / "audit_log.jsonl").read_text().splitlines()]
    assert {"skill_draft", "skill_rework", "skill_test_run", "approval_requested"} <= set(audit)

    # "yes" prints the exact commands and runs none of them
    yes = _cli("skills", "resume", home=home, stdin="y\n")
    assert yes.returncode == 0, yes.stderr
    allowed = home / "skills" / "allowed"
    assert not (allowed / "word_count.lua").exists()
    commands = [line for line in yes.stdout.splitlines() if line.startswith(("cp ", "chmod ", "luallm-agent"))]
    assert commands[:4] == [
        f"cp {home}/skills/agent/word_count.lua {allowed}/", f"cp {home}/skills/agent/word_count_test.lua {allowed}/",
        f"chmod 444 {allowed}/word_count.lua", f"chmod 444 {allowed}/word_count_test.lua"]

    # a person runs them; resume validates the promoted copy
    allowed.mkdir(parents=True)
    for cmd in commands[:4]:
        subprocess.run(cmd.split(), check=True)
    assert stat.S_IMODE((allowed / "word_count.lua").stat().st_mode) == 0o444
    resumed = _cli("skills", "resume", home=home)
    assert resumed.returncode == 0 and "validated in skills/allowed/: approved" in resumed.stdout
    # answered for good: out of pending_approvals/, kept with its answer under state/approvals/
    assert not approvals[0].exists()
    final = json.loads((home / "state" / "approvals" / approvals[0].name).read_text())
    assert final["approved"] is True and final["status"] == "approved"

    # a plan calls the promoted skill
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("a b c d\n")
    plan = tmp_path / "plan.lua"
    plan.write_text('function run(ctx)\n  return skills.word_count{ path = "notes.txt" }\nend\n')
    ran = _cli("plan", str(plan), "--workspace", str(ws), "--skills-home", str(home), home=home)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["result"] == {"words": 4}


def test_update_prints_archive_commands_and_a_wrong_version_is_not_approved(home: Path, tmp_path: Path) -> None:
    _install_samples(home)
    reply = (SAMPLES_DIR / "read_file.lua").read_text().replace('version = "1.0"', 'version = "1.1"')
    test = (SAMPLES_DIR / "read_file_test.lua").read_text().replace("hello.txt", "h.txt")
    test = test.replace('local read_file = require("read_file")',
                        'local read_file = require("read_file")\nlocal f = io.open("h.txt", "w"); '
                        'f:write("hello\\nworld\\n"); f:close()')
    replies = tmp_path / "r.json"
    replies.write_text(json.dumps([f"```lua\n{reply}```\n```lua\n{test}```\n"]))
    assert _cli("skills", "draft", "read_file", "--spec", "same, v1.1", "--scripted-replies", str(replies),
                home=home).returncode == 0
    yes = _cli("skills", "resume", "--answer", "y", home=home)
    allowed = home / "skills" / "allowed"
    assert f"mv {allowed}/read_file.lua {allowed}/.archive/read_file_v1.0.lua" in yes.stdout
    assert (allowed / "read_file.lua").read_text().count('version = "1.0"') == 1  # untouched
    again = _cli("skills", "resume", home=home)
    assert "waiting for a person to run" in again.stdout
