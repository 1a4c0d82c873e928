"""The main job: `luallm-agent demo` on the recorded responses shipped in fixtures/."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from support import ROOT, assert_wire_valid

from agent.protocol import schema_errors


def test_demo_runs_the_whole_loop_offline(tmp_path: Path) -> None:
    ws = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "agent", "demo", "--workspace", str(ws)],
                          capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    order = ["orchestration.needs_clarification", "orchestration.proposed_tasks", "tests=fail",
             "status=changes_requested", "tests=pass", "status=approved", "spec.updated"]
    positions = [out.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert "0 without a successful terminal event" in out
    assert '"subtract"' in (ws / "calc.py").read_text()
    assert "`subtract` are implemented" in (ws / "SPEC.md").read_text()
    assert json.loads((ws / "reviews" / "T-001.json").read_text())["status"] == "approved"
    receipts = sorted(p.name for p in (ws / "receipts" / "T-001").glob("*.json"))
    assert receipts == ["implement-1.json", "implement_changes-1.json", "review-1.json", "review-2.json",
                        "update_spec-1.json"]
    for r in (ws / "receipts").rglob("*-[0-9]*.json"):
        assert not schema_errors("receipt.schema.json", json.loads(r.read_text())), r
    plan_runs = list((ws / "logs" / "luallm-agent" / "plans").glob("*.json"))
    assert len(plan_runs) >= 1  # the reviewer's Lua plan was recorded (the builder writes files as text)
    audit = [json.loads(line) for line in (ws / "logs" / "luallm-agent" / "audit.jsonl").read_text().splitlines()]
    stages = {(e["task_id"].split("-")[0], e["stage"]) for e in audit if e["event"] == "progress"}
    # Each role reports its major steps (the builder also as builder.progress events on stdout).
    assert {("intake", "planning"), ("T", "implementing"), ("T", "testing"), ("T", "reviewing"),
            ("T", "updating_spec")} <= stages


def test_replay_json_mode_prints_only_schema_valid_messages(tmp_path: Path) -> None:
    ws = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "agent", "demo", "--workspace", str(ws), "--json"],
                          capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert proc.returncode == 0
    msgs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(msgs) > 20
    for m in msgs:
        assert_wire_valid(m)


def test_demo_uses_a_fresh_temp_dir_it_names_and_may_reset_only_its_own(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TMPDIR"} | {"TMPDIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-m", "agent", "demo"], capture_output=True, text=True, timeout=240,
                           cwd=ROOT, env=env)
    assert first.returncode == 0, first.stdout[-3000:]
    made = re.search(r"workspace (\S+) \(a new temporary directory\)", first.stdout)
    assert made, first.stdout[:500]
    ws = Path(made.group(1))
    assert ws.parent == tmp_path and (ws / ".luallm-agent-demo").is_file() and (ws / "SPEC.md").is_file()
    (ws / "leftover.txt").write_text("from the first run\n")
    again = subprocess.run([sys.executable, "-m", "agent", "demo", "--workspace", str(ws)], capture_output=True,
                           text=True, timeout=240, cwd=ROOT)
    assert again.returncode == 0, again.stdout[-3000:]
    assert "(an earlier demo's workspace, reset)" in again.stdout
    assert not (ws / "leftover.txt").exists()
    assert "7 commands, 0 without a successful terminal event" in again.stdout
