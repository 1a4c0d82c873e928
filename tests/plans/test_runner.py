"""run_plan / run_actions end to end: outcome, host calls, audit, deadline, heartbeat, workers."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from agent.audit import AuditLog
from agent.errors import ModelTimeout, PlanTimeout
from agent.plans import PlanLimits, parse_action_list, run_actions, run_plan, shutdown_workers
from agent.plans.pool import POOL
from agent.redact import Redactor


class Host:
    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail
        self.prompts: list[str] = []
        self.progress_msgs: list[str] = []
        self.logs: list[str] = []

    def call_llm(self, prompt: str, opts: dict) -> str:
        self.prompts.append(prompt)
        if self.fail:
            raise self.fail
        return f"echo:{prompt}:{opts.get('tag')}"

    def progress(self, message: str) -> None:
        self.progress_msgs.append(message)

    def log(self, message: str) -> None:
        self.logs.append(message)


def test_outcome_fields(run, ws):
    code, out = run('''
function run(ctx)
  print("hello", ctx.inputs.n)
  tools.write("a.txt", "1")
  tools.write("b.txt", "2")
  tools.write("a.txt", "3")
  return {n = ctx.inputs.n * 2, list = {1, 2, 3}, empty = {}, nested = {k = "v"}, role = ctx.role,
          files = #ctx.workspace.files > 0}
end''', {"action": "build", "inputs": {"n": 21}, "task_id": "T1", "role": "builder"})
    assert code == "ok", out
    assert out.result == {"n": 42, "list": [1, 2, 3], "empty": [], "nested": {"k": "v"}, "role": "builder", "files": True}
    assert out.output == "hello\t21\n" and not out.output_truncated
    assert [(a.path, a.size) for a in out.artifacts] == [("a.txt", 1), ("b.txt", 1)]
    assert out.artifacts[0].sha256 == "sha256:" + __import__("hashlib").sha256(b"3").hexdigest()
    assert [c["tool"] for c in out.tool_calls] == ["write"] * 3
    assert set(out.tool_calls[0]) == {"tool", "args", "ok", "result_bytes", "ms"}
    assert out.run_id in out.record_path and (ws.root / out.record_path).is_file()


def test_record_file_contents(run, ws):
    code, out = run('function run(ctx)\n  tools.read("hello.txt")\n  tools.read("missing")\n  return "r"\nend')
    record = json.loads((ws.root / out.record_path).read_text())
    assert record["source"].startswith("function run") and record["ok"] and record["result"] == "r"
    assert [c["ok"] for c in record["tool_calls"]] == [True, False]
    assert record["limits"]["instructions"] == 1_000_000
    assert record["usage"]["tool_calls"] == 2 and record["usage"]["read_bytes"] == 23


def test_failed_run_is_recorded_and_error_names_record(run, ws):
    code, err = run("function run(ctx)\n  error('boom')\nend")
    assert code == "plan_runtime_error" and err.details["line"] == 2 and "boom" in err.message
    record = json.loads((ws.root / err.details["record"]).read_text())
    assert record["ok"] is False and record["error"]["code"] == "plan_runtime_error"


def test_invalid_plan_is_recorded_too(run, ws):
    code, err = run("function run(ctx) return nope end")
    assert code == "plan_invalid"
    assert (ws.root / err.details["record"]).is_file()


def test_host_call_llm_progress_log(run):
    host = Host()
    code, out = run('''
function run(ctx)
  tools.progress("started")
  tools.log("a note")
  return tools.call_llm("question", {tag = "t1"})
end''', host=host)
    assert code == "ok" and out.result == "echo:question:t1"
    assert host.prompts == ["question"] and host.progress_msgs == ["started"] and host.logs == ["a note"]


def test_host_error_becomes_error_table(run):
    code, out = run('function run(ctx)\n  local r = tools.call_llm("q")\n  return r\nend', host=Host(ModelTimeout("slow")))
    assert code == "ok" and out.result == {"error": "slow", "code": "model_timeout"}


def test_no_host_means_no_model(run):
    code, out = run('function run(ctx)\n  local r = tools.call_llm("q")\n  return r.error\nend')
    assert out.result == "no model configured"


def test_audit_is_redacted(run, tmp_path):
    audit = AuditLog(tmp_path / "audit.jsonl", Redactor(environ={"SERVICE_TOKEN": "s3cr3t-value"}), stderr=False)
    code, out = run('function run(ctx)\n  tools.write("x.txt", "key=s3cr3t-value")\n  return 1\nend', audit=audit)
    assert code == "ok"
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    events = [e["event"] for e in lines]
    assert events == ["plan_start", "plan_tool_call", "plan_end"]
    call = lines[1]
    assert call["tool"] == "write" and call["ok"] and call["result_bytes"] > 0 and "ms" in call
    assert "s3cr3t-value" not in (tmp_path / "audit.jsonl").read_text()
    assert out.tool_calls[0]["args"]["content"] == "key=[REDACTED]"


def test_deadline_caps_the_wall_limit(run, timer):
    code, err = run("function run(ctx)\n  while true do end\nend",
                    limits=PlanLimits(wall_s=30, instructions=10**12), deadline=time.time() + 0.6)
    assert code == "plan_timeout" and timer() < 2


class StalledHost(Host):
    """Its progress lines wait `stall_s`, as the agent does when the orchestrator stops reading stdout."""

    def __init__(self, stall_s: float) -> None:
        super().__init__()
        self.stall_s = stall_s

    def progress(self, message: str) -> None:
        time.sleep(self.stall_s)
        super().progress(message)


@pytest.mark.parametrize("then", ["return", "ask the model"])
def test_the_agents_own_waiting_is_not_the_plans_time(run, then):
    # The plan needs well under its 1.5 s; the agent then waits 2.5 s on its output. With
    # "ask the model" the plan itself waits for an answer the blocked agent gives late, so its own
    # clock must leave the wait out too.
    tail = 'return tools.call_llm("q", {tag = "x"})' if then == "ask the model" else "return x"
    source = ("function run(ctx)\n  local x = 0\n  for i = 1, 20000 do x = x + i end\n"
              f'  tools.progress("half way")\n  {tail}\nend')
    host = StalledHost(2.5)
    code, out = run(source, host=host, limits=PlanLimits(wall_s=1.5, instructions=10**9))
    assert code == "ok", out
    assert host.progress_msgs == ["half way"] and len(host.prompts) == (then == "ask the model")


def test_the_command_deadline_still_bounds_a_stalled_plan(run, timer):
    code, _ = run('function run(ctx)\n  tools.progress("p")\n  while true do end\nend', host=StalledHost(1.0),
                  limits=PlanLimits(wall_s=30, instructions=10**12), deadline=time.time() + 2.0)
    assert code == "plan_timeout" and timer() < 4


def test_past_deadline_fails_at_once(ws):
    with pytest.raises(PlanTimeout):
        run_plan("function run(c) return 1 end", {}, workspace=ws, deadline=time.time() - 1)


def test_heartbeat_keeps_ticking_while_a_plan_spins(run):
    interval = 0.1
    ticks: list[float] = []
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(interval)

    thread = threading.Thread(target=heartbeat, daemon=True)
    thread.start()
    try:
        code, _ = run("function run(ctx)\n  local x = 0\n  while true do x = x + 1 end\nend",
                      limits=PlanLimits(wall_s=1.5, instructions=10**12))
    finally:
        stop.set()
        thread.join()
    assert code == "plan_timeout"
    gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
    assert len(ticks) >= 10 and max(gaps) < interval + 1.0


def test_run_actions_with_seed_002_names(ws, limits):
    actions = parse_action_list({"actions": [
        {"tool": "write_file", "args": {"path": "notes/a.md", "content": "# A"}},
        {"tool": "read_file", "args": {"path": "notes/a.md"}},
        {"tool": "create_file", "args": {"path": "notes/a.md", "content": "again"}},
        {"tool": "list_directory", "args": {"path": "notes"}},
        {"tool": "find_files", "args": {"pattern": "*.md"}},
        {"tool": "edit", "args": {"path": "notes/a.md", "old_string": "# A", "new_string": "# B"}},
        {"tool": "teleport", "args": {}},
    ]})
    out = run_actions(actions, workspace=ws, limits=limits)
    res = out.result
    assert [r["ok"] for r in res] == [True, True, False, True, True, True, False]
    assert res[1]["result"] == "# A" and res[2]["code"] == "exists" and res[3]["result"] == ["a.md"]
    assert res[4]["result"] == ["notes/a.md"] and res[6]["code"] == "unknown_tool"
    assert [a.path for a in out.artifacts] == ["notes/a.md"]
    assert (ws.root / "notes" / "a.md").read_text() == "# B"
    assert Path(ws.root / out.record_path).is_file()


def test_each_plan_gets_a_fresh_worker(run):
    code, a = run("function run(c) return tostring(print) end")
    code, b = run("function run(c) return tostring(print) end")
    assert code == "ok"
    assert POOL._warm is None or POOL._warm.alive()


def test_shutdown_workers_is_fast_and_recoverable(run):
    POOL.prewarm()
    t = time.monotonic()
    shutdown_workers()
    assert time.monotonic() - t < 1
    assert POOL._warm is None
    assert run.healthy()


def test_shutdown_kills_a_running_plan(ws):
    result: dict = {}

    def target() -> None:
        try:
            run_plan("function run(c)\n  while true do end\nend", {}, workspace=ws,
                     limits=PlanLimits(wall_s=20, instructions=10**13))
        except Exception as exc:
            result["exc"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    time.sleep(0.5)
    t = time.monotonic()
    shutdown_workers()
    thread.join(timeout=5)
    assert not thread.is_alive() and time.monotonic() - t < 2
    assert result["exc"].code in ("plan_runtime_error", "plan_timeout")
