"""Run records, their DOT graph, and the `plan` / `tools` commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agent.plans import record_to_dot


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent.plans.cli", *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def test_dot_graph_shows_calls_and_file_flow():
    record = {"run_id": "plan-1", "kind": "lua", "ok": True, "result": {"x": 1}, "tool_calls": [
        {"tool": "write", "args": {"path": "a.txt", "content": "x"}, "ok": True, "result_bytes": 10, "ms": 1},
        {"tool": "read", "args": {"path": "missing"}, "ok": False, "error": "no such file", "ms": 0},
        {"tool": "read", "args": {"path": "./a.txt"}, "ok": True, "result_bytes": 1, "ms": 0},
    ]}
    dot = record_to_dot(record)
    assert dot.startswith('digraph "plan-1" {') and dot.rstrip().endswith("}")
    assert "start -> c1;" in dot and "c1 -> c2;" in dot and "c3 -> end;" in dot
    assert 'c1 -> c3 [style=dashed, label="a.txt"];' in dot
    assert "color=red" in dot and "no such file" in dot


def test_dot_graph_of_failed_run_names_error_and_line():
    dot = record_to_dot({"run_id": "r", "tool_calls": [], "error": {"code": "plan_timeout", "message": "m", "line": 7}})
    assert 'plan_timeout: m (line 7)' in dot and "start -> end;" in dot


def test_cli_plan_runs_and_prints_json(ws, tmp_path):
    plan = tmp_path / "reply.md"
    plan.write_text('Sure:\n```lua\nfunction run(ctx)\n  print("hi")\n  return {n = ctx.inputs.n}\nend\n```\n')
    proc = _cli("plan", str(plan), "--workspace", str(ws.root), "--input", '{"n": 3}')
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["output"] == "hi\n" and out["result"] == {"n": 3}
    graph = _cli("plan", "--graph", str(ws.root / out["record"]))
    assert graph.returncode == 0 and graph.stdout.startswith("digraph")


def test_cli_plan_failure_goes_to_stderr(ws, tmp_path):
    plan = tmp_path / "bad.lua"
    plan.write_text("function run(ctx)\n  return io.open('/etc/passwd')\nend\n")
    proc = _cli("plan", str(plan), "--workspace", str(ws.root))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == "sandbox_violation: forbidden: io.open (line 2)"


def test_cli_role_validation_skips_missing_schema(ws, tmp_path):
    plan = tmp_path / "p.lua"
    plan.write_text("function run(ctx) return {anything = true} end\n")
    # run from a directory without schemas/: the package checkout may have one, so pick a role check that
    # passes either way only when the schema is absent; assert the command does not crash
    proc = _cli("plan", str(plan), "--workspace", str(ws.root), "--role", "reviewer", cwd=tmp_path)
    assert proc.returncode in (0, 1)
    if proc.returncode == 1:
        assert proc.stderr.startswith("plan_runtime_error: result does not match the reviewer answer schema")


def test_cli_tools_json():
    proc = _cli("tools", "--json")
    assert proc.returncode == 0
    names = [t["name"] for t in json.loads(proc.stdout)]
    assert names[:3] == ["read", "write", "create"] and "call_llm" in names


def test_cli_plan_runs_an_action_list(ws, tmp_path):
    acts = tmp_path / "acts.json"
    acts.write_text(json.dumps({"actions": [{"tool": "write_file", "args": {"path": "o.txt", "content": "x"}}]}))
    proc = _cli("plan", str(acts), "--workspace", str(ws.root))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"][0]["ok"] is True


def test_top_level_luallm_agent_plan(ws, tmp_path):
    import pytest

    plan = tmp_path / "p.lua"
    plan.write_text('function run(ctx)\n  print("x")\n  return {a = ctx.inputs.a}\nend\n')
    proc = subprocess.run([sys.executable, "-m", "agent", "plan", str(plan), "--workspace", str(ws.root),
                           "--input", '{"a": 1}'], capture_output=True, text=True, timeout=60)
    if proc.returncode == 2 and "invalid choice" in proc.stderr:
        pytest.skip("agent/cli.py does not wire `plan` yet")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"] == {"a": 1}


def test_cli_plan_prints_a_bounded_error_for_a_30_mb_lua_error(ws, tmp_path):
    plan = tmp_path / "huge.lua"
    plan.write_text('function run(ctx)\n  error(string.rep("x", 30 * 1024 * 1024))\nend\n')
    proc = _cli("plan", str(plan), "--workspace", str(ws.root))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("plan_runtime_error: ") and len(proc.stderr) < 5000
    assert "truncated:" in proc.stderr
    record = max((ws.root / "logs/luallm-agent/plans").glob("*.json"), key=lambda p: p.stat().st_mtime)
    assert record.stat().st_size < 20_000


def test_cli_plan_keeps_input_secrets_out_of_stdout_stderr_and_the_record(ws, tmp_path):
    secret = "cli-secret-value-93"
    plan = tmp_path / "p.lua"
    plan.write_text('function run(ctx)\n  local s = ctx.inputs.api_key\n  print("got " .. s)\n'
                    '  tools.log("log " .. s)\n  return {echo = s}\nend\n')
    proc = _cli("plan", str(plan), "--workspace", str(ws.root), "--input", json.dumps({"api_key": secret}))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert secret not in proc.stdout + proc.stderr and out["output"] == "got [REDACTED]\n"
    record = (ws.root / out["record"]).read_text()
    assert secret not in record and "log [REDACTED]" in record
    bad = tmp_path / "bad.lua"
    bad.write_text('function run(ctx)\n  error("failed with " .. ctx.inputs.api_key)\nend\n')
    proc = _cli("plan", str(bad), "--workspace", str(ws.root), "--input", json.dumps({"api_key": secret}))
    assert proc.returncode == 1 and secret not in proc.stderr and "[REDACTED]" in proc.stderr
