"""End to end: the real `luallm-agent` CLI as a subprocess, a scripted model, a fake luallm."""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from pathlib import Path

import pytest
from supervised_support import WAIT_FOR_GO, World, graph, transitions_match

AUTO_WRITES = {"approvals": {"path_write": "auto", "task_confirmation": "auto"},
               "limits": {"llm_backoff_base_seconds": 0}}

THREE = graph(
    {"id": "1", "action": "plan", "depends_on": [], "reads": ["data.csv"],
     "source": "function run(ctx)\n  return tools.read('data.csv')\nend"},
    {"id": "2", "action": "llm_call", "depends_on": ["1"], "prompt_template": "Summarise:\n{node_1_result}"},
    {"id": "3", "action": "llm_call", "depends_on": ["2"], "writes": ["summary.md"],
     "prompt_template": "As Markdown:\n{node_2_result}"})


def _wait_for(pred, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if pred():
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def test_init_makes_the_home_with_protection_classes_and_never_overwrites(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init()
    h = w.home
    for d in ("state", "state/pending_approvals", "skills/agent", "skills/allowed", "skills/allowed/.archive",
              "tasks"):
        assert (h / d).is_dir(), d
    assert stat.S_IMODE((h / "config.json").stat().st_mode) == 0o444
    cfg = json.loads((h / "config.json").read_text())
    assert cfg["$schema"] == "luallm-agent-config-v1" and cfg["approvals"]["skill_promotion"] == "manual"
    os.chmod(h / "config.json", 0o644)
    (h / "config.json").write_text(json.dumps({**cfg, "allowed_paths": ["/tmp"]}))
    again = w.cli("init")
    assert again.returncode == 0 and "kept existing" in again.stdout
    assert json.loads((h / "config.json").read_text())["allowed_paths"] == ["/tmp"]


def test_doctor_exits_2_without_luallm_and_0_with_a_luallm_that_behaves_like_the_real_one(tmp_path: Path) -> None:
    bare = World(tmp_path / "a" if (tmp_path / "a").mkdir() is None else tmp_path, luallm=False)
    bare.init()
    without = bare.cli("doctor")
    assert without.returncode == 2, without.stdout
    assert "[warn] luallm binary" in without.stdout
    with_fake = World(tmp_path / "b" if (tmp_path / "b").mkdir() is None else tmp_path)
    with_fake.init()
    ok = with_fake.cli("doctor", "--json")
    report = json.loads(ok.stdout)
    assert ok.returncode == 0, [c for c in report["checks"] if c["level"] in ("warn", "fatal")]
    names = {c["name"] for c in report["checks"]}
    assert {"luallm help --json", "m1", "OS sandbox", "config mode", "running task"} <= names


def test_doctor_is_fatal_on_an_invalid_config(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init({"approvals": {"skill_promotion": "auto"}})
    bad = w.cli("doctor")
    assert bad.returncode == 1 and "skill_promotion" in bad.stdout


def test_run_completes_a_three_node_graph_and_audits_every_transition(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init(AUTO_WRITES)
    (w.ws / "data.csv").write_text("a,b\n1,2\n")
    replies = w.replies([THREE, "two columns, a and b", "# Summary\n\ntwo columns\n"])
    done = w.cli("run", "summarise data.csv", "--scripted-replies", str(replies))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (w.ws / "summary.md").read_text() == "# Summary\n\ntwo columns\n"
    task = w.current()
    assert task["status"] == "complete" and [n["status"] for n in task["graph"]["nodes"]] == ["complete"] * 3
    assert "COMPLETE" in done.stdout and "node  action" in done.stdout   # the summary table
    assert "GRAPH_EXEC node 2" in done.stdout                          # plain progress lines off a TTY
    transitions_match(w)
    assert [t["to"] for t in task["transitions"]] == ["planning", "graph_exec", "complete"]
    seen = {e["event"] for e in w.audit()}
    assert {"task_start", "graph_generated", "node_start", "node_complete", "llm_call", "llm_response",
            "luallm_exec", "approval_requested", "approval_resolved", "file_read", "file_write", "task_end"} <= seen
    # the harness state of seed 002
    d = w.task_dir()
    assert json.loads((d / "task.json").read_text())["prompt"] == "summarise data.csv"
    assert json.loads((d / "state.json").read_text())["status"] == "complete"
    assert json.loads((d / "heartbeat.json").read_text())["iteration"] == task["step_count"]
    actions = [json.loads(line) for line in (d / "actions.jsonl").read_text().splitlines()]
    assert [a["iteration"] for a in actions] == list(range(1, task["step_count"] + 1))
    assert any(r["text"] == "two columns, a and b" for a in actions for r in a["llm_response"])
    # log
    log = w.cli("log", "--task", task["id"], "--json", "--tail", "0")
    assert [json.loads(line)["event"] for line in log.stdout.splitlines()][-1] == "task_end"
    assert w.cli("log", "--tail", "3").stdout.count("\n") == 3


def test_a_write_pauses_without_a_tty_resume_yes_cannot_approve_it_and_approve_id_can(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init({"limits": {"llm_backoff_base_seconds": 0}})       # path_write stays "prompt"
    (w.ws / "data.csv").write_text("a,b\n")
    first = w.cli("run", "summarise", "--yes", "--scripted-replies",
                  str(w.replies([THREE, "cols", "# S\n"])))
    assert first.returncode == 3, first.stdout + first.stderr
    assert "path_write" in first.stdout and "luallm-agent run --resume" in first.stdout
    assert not (w.ws / "summary.md").exists()
    task = w.current()
    assert task["status"] == "approval" and task["paused"] is True
    pending = list((w.home / "state" / "pending_approvals").glob("path_write_*.json"))
    assert len(pending) == 1 and json.loads(pending[0].read_text())["details"]["path"] == "summary.md"
    # --resume without --yes and without a TTY: still paused, nothing written
    again = w.cli("run", "--resume")
    assert again.returncode == 3 and not (w.ws / "summary.md").exists()
    # --yes never approves a write (seed §8), not even one the pause listed
    yes = w.cli("run", "--resume", "--yes")
    assert yes.returncode == 3 and not (w.ws / "summary.md").exists()
    listed = json.loads(w.cli("approvals", "list", "--json").stdout)
    assert [(r["id"], r["tier"], r["waiting"]) for r in listed] == [(pending[0].stem, "path_write", True)]
    assert f"id {pending[0].stem}" in yes.stdout
    approved = w.cli("approvals", "approve", pending[0].stem)
    assert approved.returncode == 0, approved.stderr
    assert not (w.ws / "summary.md").exists()          # answered; applied by the resume
    done = w.cli("run", "--resume")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (w.ws / "summary.md").read_text() == "# S\n"
    assert not list((w.home / "state" / "pending_approvals").glob("*.json"))
    kept = json.loads((w.home / "state" / "approvals" / pending[0].name).read_text())
    assert kept["decision"] == "approved" and kept["decided_by"] == "luallm-agent approvals approve"
    resolved = [e["data"] for e in w.events("approval_resolved") if e["data"]["tier"] == "path_write"]
    assert resolved == [{**resolved[0], "decision": "approved", "by": "luallm-agent approvals approve"}]
    assert w.events("task_paused") and w.events("approval_answered")
    transitions_match(w)


def test_run_yes_does_not_skip_a_write_or_a_destructive_overwrite(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init({"approvals": {"path_write": "auto"}})
    (w.ws / "summary.md").write_text("a person's notes\n")
    g = graph({"id": "1", "action": "llm_call", "depends_on": [], "writes": ["summary.md"], "prompt_template": "x"})
    paused = w.cli("run", "overwrite it", "--yes", "--scripted-replies", str(w.replies([g, "model text\n"])))
    assert paused.returncode == 3 and "destructive_overwrite" in paused.stdout
    assert (w.ws / "summary.md").read_text() == "a person's notes\n"
    # --resume --yes cannot approve the overwrite either
    again = w.cli("run", "--resume", "--yes")
    assert again.returncode == 3 and "destructive_overwrite" in again.stdout
    assert (w.ws / "summary.md").read_text() == "a person's notes\n"
    assert not [e for e in w.events("approval_resolved") if e["data"]["tier"] == "destructive_overwrite"]
    # a person's answer to that one request can
    [request] = json.loads(w.cli("approvals", "list", "--json").stdout)
    assert request["tier"] == "destructive_overwrite"
    assert w.cli("approvals", "approve", request["id"]).returncode == 0
    done = w.cli("run", "--resume")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (w.ws / "summary.md").read_text() == "model text\n"


def test_resume_yes_cannot_approve_network_access_and_a_rejection_fails_the_node(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init({**AUTO_WRITES, "limits": {"max_plan_retries": 0, "llm_backoff_base_seconds": 0}})
    g = graph({"id": "1", "action": "llm_call", "depends_on": [], "network": ["https://example.com/data"],
               "prompt_template": "x"})
    paused = w.cli("run", "fetch", "--yes", "--scripted-replies", str(w.replies([g, "fetched"])))
    assert paused.returncode == 3 and "network_access" in paused.stdout
    assert w.cli("run", "--resume", "--yes").returncode == 3
    [request] = json.loads(w.cli("approvals", "list", "--json").stdout)
    assert request["tier"] == "network_access" and request["waiting"]
    assert w.cli("approvals", "reject", request["id"]).returncode == 0
    done = w.cli("run", "--resume")
    assert done.returncode == 1 and "network access to https://example.com/data was denied" in w.current()["error"]
    kept = json.loads((w.home / "state" / "approvals" / f"{request['id']}.json").read_text())
    assert kept["decision"] == "denied"
    assert w.cli("approvals", "approve", request["id"]).returncode == 2   # answered: no longer pending


def test_model_wait_pauses_with_the_start_command_and_finishes_once_the_model_runs(tmp_path: Path) -> None:
    w = World(tmp_path, running=())
    w.init({**AUTO_WRITES, "model_selection": {"default": {"prefer": ["m1"], "fallback": []}}})
    (w.ws / "data.csv").write_text("a,b\n")
    replies = w.replies([THREE, "cols", "# S\n"])
    paused = w.cli("run", "summarise", "--scripted-replies", str(replies))
    assert paused.returncode == 3, paused.stdout + paused.stderr
    assert "luallm start m1" in paused.stdout and "luallm-agent run --resume" in paused.stdout
    assert w.current()["status"] == "model_wait" and w.current()["waiting_for_model"] == "m1"
    assert w.events("model_not_running")[0]["data"]["start_command"] == "luallm start m1"
    still = w.cli("run", "--resume", "--scripted-replies", str(replies))
    assert still.returncode == 3 and "still not running" in still.stdout
    w.start_model("m1")
    done = w.cli("run", "--resume", "--scripted-replies", str(replies))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (w.ws / "summary.md").read_text() == "# S\n"
    assert [t["to"] for t in w.current()["transitions"]][:3] == ["planning", "model_wait", "planning"]
    transitions_match(w)


def _kill_graph() -> dict[str, object]:
    return graph(
        {"id": "1", "action": "llm_call", "depends_on": [], "writes": ["out.md"], "prompt_template": "write it"},
        {"id": "2", "action": "plan", "depends_on": ["1"], "source": WAIT_FOR_GO},
        {"id": "3", "action": "llm_call", "depends_on": ["2"], "prompt_template": "after {node_2_result}"})


def test_kill_9_mid_node_then_resume_finishes_with_no_effect_applied_twice(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init(AUTO_WRITES)
    proc = w.popen("run", "write then wait", "--scripted-replies", str(w.replies([_kill_graph(), "first\n", "end"])))
    try:
        _wait_for(lambda: (w.home / "state" / "current_task.json").exists() and
                  w.current()["current_node"] == "2" and w.current()["graph"]["nodes"][1]["status"] == "running")
        time.sleep(0.3)
        inode = (w.ws / "out.md").stat().st_ino
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert (w.ws / "out.md").read_text() == "first\n"
    assert w.current()["graph"]["nodes"][1]["status"] == "running"
    (w.ws / "go.txt").write_text("go")
    # Only node 3's reply is left: recomputing node 1 would consume it and fail the run.
    done = w.cli("run", "--resume", "--scripted-replies", str(w.replies(["end"])))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (w.ws / "out.md").stat().st_ino == inode and (w.ws / "out.md").read_text() == "first\n"
    writes = [e for e in w.events("file_write") if e["data"]["path"] == "out.md"]
    assert [e["data"]["outcome"] for e in writes] == ["writing"]
    assert [n["status"] for n in w.current()["graph"]["nodes"]] == ["complete"] * 3


def test_kill_9_between_the_write_and_its_journal_entry_does_not_write_twice(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init(AUTO_WRITES)
    g = graph({"id": "1", "action": "llm_call", "depends_on": [], "writes": ["out.md"], "prompt_template": "w"},
              {"id": "2", "action": "llm_call", "depends_on": ["1"], "prompt_template": "then"})
    env_cli = w.env()
    env_cli["LUALLM_AGENT_FAILPOINT"] = "after_write"
    import subprocess

    crashed = subprocess.run(w.argv("run", "x", "--scripted-replies", str(w.replies([g, "one\n", "two"]))),
                             capture_output=True, text=True, env=env_cli, cwd=w.ws, stdin=subprocess.DEVNULL,
                             timeout=60)
    assert crashed.returncode == -signal.SIGKILL
    effect = w.current()["graph"]["nodes"][0]["effects"][0]
    assert effect["status"] == "staged" and (w.ws / "out.md").read_text() == "one\n"
    inode = (w.ws / "out.md").stat().st_ino
    done = w.cli("run", "--resume", "--scripted-replies", str(w.replies(["two"])))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (w.ws / "out.md").stat().st_ino == inode
    assert [e["data"]["outcome"] for e in w.events("file_write")] == ["writing", "already_present"]


@pytest.mark.parametrize("how", ["cli", "state_json"])
def test_an_external_stop_ends_a_running_plan(tmp_path: Path, how: str) -> None:
    w = World(tmp_path)
    w.init(AUTO_WRITES)
    proc = w.popen("run", "wait", "--scripted-replies", str(w.replies([_kill_graph(), "first\n", "end"])))
    try:
        _wait_for(lambda: w.current()["current_node"] == "2")
        time.sleep(0.3)
        task_id = w.current()["id"]
        if how == "cli":
            assert w.cli("stop", task_id).returncode == 0
        else:
            state = w.home / "tasks" / task_id / "state.json"
            data = json.loads(state.read_text())
            state.write_text(json.dumps({**data, "status": "stopped"}))
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=30)
        assert time.monotonic() - t0 < 10
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 4, out + err
    task = w.current()
    assert task["status"] == "stopped" and task["termination_reason"] == "external_stop"
    assert json.loads((w.task_dir() / "state.json").read_text())["status"] == "stopped"
    assert w.events("task_end")[-1]["data"]["status"] == "stopped"
    transitions_match(w)


def test_the_step_budget_ends_the_run_with_a_termination_reason(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init({**AUTO_WRITES, "limits": {"max_task_steps": 3, "llm_backoff_base_seconds": 0}})
    g = graph(*({"id": str(i), "action": "llm_call", "depends_on": [], "prompt_template": "x"} for i in range(5)))
    done = w.cli("run", "many", "--scripted-replies", str(w.replies([g, "a", "b", "c", "d", "e"])))
    assert done.returncode == 1
    assert w.current()["termination_reason"] == "max_iterations" and w.events("task_budget_exceeded")


def test_a_corrupted_state_refuses_to_run_and_names_the_fix(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init()
    (w.home / "state" / "current_task.json").write_text("{not json")
    refused = w.cli("run", "--resume")
    assert refused.returncode == 2 and "luallm-agent run --reset" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert w.cli("run", "again").returncode == 2
    assert w.cli("run", "--reset").returncode == 0
    assert not (w.home / "state" / "current_task.json").exists()


@pytest.mark.parametrize(("path", "why"), [
    ("../outside.md", "outside the workspace"),
    ("/etc/cron.d/x", "blocked by config.json"),
    (".git/hooks/pre-commit", "dot-paths"),
    ("HOME/config.json", "never writes config.json"),
    ("HOME/skills/allowed/evil.lua", "never writes allowed"),
])
def test_a_graph_that_writes_where_it_may_not_is_re_planned_with_the_exact_error(tmp_path: Path, path: str,
                                                                               why: str) -> None:
    w = World(tmp_path)
    w.init(AUTO_WRITES)
    target = path.replace("HOME", str(w.home))
    bad = graph({"id": "1", "action": "llm_call", "depends_on": [], "writes": [target], "prompt_template": "x"})
    good = graph({"id": "1", "action": "llm_call", "depends_on": [], "writes": ["ok.md"], "prompt_template": "x"})
    done = w.cli("run", "attack", "--scripted-replies", str(w.replies([bad, good, "fine\n"])))
    assert done.returncode == 0, done.stdout + done.stderr
    problems = w.events("graph_validation_failed")[0]["data"]["problems"]
    assert why in problems[0], problems
    assert (w.ws / "ok.md").read_text() == "fine\n"
    assert stat.S_IMODE((w.home / "config.json").stat().st_mode) == 0o444
    assert not (w.home / "skills" / "allowed" / "evil.lua").exists()


def test_a_failing_node_retries_then_is_re_planned_and_downstream_waits(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init(AUTO_WRITES)
    g = graph({"id": "1", "action": "plan", "depends_on": [], "max_retries": 2,
               "source": "function run(ctx)\n  error('boom')\nend"},
              {"id": "2", "action": "llm_call", "depends_on": ["1"], "prompt_template": "got {node_1_result}"})
    fixed = graph({"id": "1", "action": "plan", "depends_on": [], "source": "function run(ctx)\n  return 7\nend"})
    done = w.cli("run", "x", "--scripted-replies", str(w.replies([g, fixed, "seven"])))
    assert done.returncode == 0, done.stdout + done.stderr
    assert [e["data"]["attempt"] for e in w.events("node_retry")] == [1]
    assert "boom" in w.events("node_failed_final")[0]["data"]["error"]
    assert w.events("graph_generated")[-1]["data"]["replan_of"] == "1"
    assert w.current()["graph"]["nodes"][0]["result"] == 7


def test_a_node_that_fails_for_good_skips_everything_downstream(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init({**AUTO_WRITES, "limits": {"max_plan_retries": 0, "llm_backoff_base_seconds": 0}})
    g = graph({"id": "1", "action": "plan", "depends_on": [], "max_retries": 1,
               "source": "function run(ctx)\n  error('boom')\nend"},
              {"id": "2", "action": "llm_call", "depends_on": ["1"], "prompt_template": "a"},
              {"id": "3", "action": "llm_call", "depends_on": ["2"], "prompt_template": "b"})
    done = w.cli("run", "x", "--scripted-replies", str(w.replies([g])))
    assert done.returncode == 1
    assert [n["status"] for n in w.current()["graph"]["nodes"]] == ["failed", "skipped", "skipped"]
    assert "boom" in w.current()["error"]


def test_a_plan_may_only_write_the_files_it_declared(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init({**AUTO_WRITES, "limits": {"max_plan_retries": 0, "max_node_retries": 1}})
    g = graph({"id": "1", "action": "plan", "depends_on": [], "writes": ["a.md"],
               "source": "function run(ctx)\n  return {files = {['b.md'] = 'sneaky'}}\nend"})
    done = w.cli("run", "x", "--scripted-replies", str(w.replies([g])))
    assert done.returncode == 1 and "undeclared files ['b.md']" in w.current()["error"]
    assert not (w.ws / "b.md").exists()


def test_a_decision_takes_one_branch_and_skips_the_other(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init(AUTO_WRITES)
    g = graph({"id": "1", "action": "llm_call", "depends_on": [], "prompt_template": "rows?"},
              {"id": "d", "action": "decision", "depends_on": ["1"], "condition": "{node_1_result} is above 10",
               "if_true": "big", "if_false": "small"},
              {"id": "big", "action": "llm_call", "depends_on": [], "prompt_template": "big"},
              {"id": "small", "action": "llm_call", "depends_on": [], "prompt_template": "small"})
    done = w.cli("run", "x", "--scripted-replies", str(w.replies([g, "42", "true", "handled big"])))
    assert done.returncode == 0, done.stdout + done.stderr
    status = {n["id"]: n["status"] for n in w.current()["graph"]["nodes"]}
    assert status == {"1": "complete", "d": "complete", "big": "complete", "small": "skipped"}


def test_an_ambiguous_decision_pauses_for_a_person(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init(AUTO_WRITES)
    g = graph({"id": "d", "action": "decision", "depends_on": [], "condition": "is it good?",
               "if_true": "a", "if_false": "b"},
              {"id": "a", "action": "llm_call", "depends_on": [], "prompt_template": "a"},
              {"id": "b", "action": "llm_call", "depends_on": [], "prompt_template": "b"})
    paused = w.cli("run", "x", "--scripted-replies", str(w.replies([g, "hard to say"])))
    assert paused.returncode == 3 and "ambiguous" in paused.stdout
    assert w.cli("run", "--resume", "--yes").returncode == 3   # --yes never answers a decision
    pending = next((w.home / "state" / "pending_approvals").glob("decision_*.json"))
    os.chmod(pending, 0o600)
    pending.write_text(json.dumps({**json.loads(pending.read_text()), "decision": "false"}))
    done = w.cli("run", "--resume", "--scripted-replies", str(w.replies(["did b"])))
    assert done.returncode == 0, done.stdout + done.stderr
    assert {n["id"]: n["status"] for n in w.current()["graph"]["nodes"]}["a"] == "skipped"


def test_the_audit_log_rotates_by_size_and_count(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init({**AUTO_WRITES, "audit": {"max_size_mb": 0.003, "max_files": 2}})
    (w.ws / "data.csv").write_text("a\n")
    assert w.cli("run", "x", "--scripted-replies", str(w.replies([THREE, "a", "b"]))).returncode == 0
    state = w.home / "state"
    assert (state / "audit_log.jsonl.1").exists() and (state / "audit_log.jsonl.2").exists()
    assert not (state / "audit_log.jsonl.3").exists()
    assert (state / "audit_log.jsonl").stat().st_size <= 0.003 * 1024 * 1024 + 4096
