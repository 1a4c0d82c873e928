"""End-to-end: the real agent as a subprocess, bad input, lifecycle and failure mapping."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from support import assert_wire_valid, dumps, events, make_command


def test_starts_with_starting_then_ready(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", wait_ready=False)
    got = agent.ready()
    beats = [m for m in got if m["kind"] == "heartbeat"]
    assert [b["status"] for b in beats[:2]] == ["starting", "ready"]
    assert beats[0]["seq"] == 1 and beats[1]["seq"] == 2
    assert beats[1]["stats"]["rss_bytes"] > 0 and 0 <= beats[1]["stats"]["cpu_pct"] <= 100


@pytest.mark.parametrize("line, code", [
    (b"this is not json", "invalid_command"),
    (b"[1, 2]", "invalid_command"),
    (b'{"kind": "command", "task_id": "T-9", "correlation_id": "c-9"}', "invalid_command"),
])
def test_bad_input_gets_error_and_agent_keeps_serving(spawn, line: bytes, code: str) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    agent.send(line)
    got = agent.until(lambda m: m.get("event") == "error")
    err = got[-1]
    assert err["payload"]["code"] == code and err["status"] == "failed"
    if b"T-9" in line:
        assert err["task_id"] == "T-9" and err["correlation_id"] == "c-9"
        assert "message_id" in err["payload"]["message"]
    agent.send(b"still not json")
    assert agent.until(lambda m: m.get("event") == "error")[-1]["payload"]["code"] == "invalid_command"


def test_schema_invalid_command_names_the_field(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    cmd = make_command("implement")
    cmd["to"]["agent_type"] = "wizard"
    got = agent.run(cmd)
    err = events(got, "error")[-1]
    assert err["payload"]["code"] == "invalid_command"
    assert "$.to.agent_type" in err["payload"]["message"]
    assert err["task_id"] == cmd["task_id"]


def test_bad_deadline_timestamp_is_rejected(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    got = agent.run(make_command("implement", deadline="tomorrow at noon"))
    err = events(got, "error")[-1]
    assert err["payload"]["code"] == "invalid_command" and "$.deadline" in err["payload"]["message"]


def test_unsupported_action_for_role(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("reviewer")
    got = agent.run(make_command("implement", role="reviewer"))
    assert events(got, "error")[-1]["payload"]["code"] == "unsupported_action"
    assert agent.proc.poll() is None


def test_oversize_line_is_discarded_and_answered(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder", "--max-line-bytes", "1024")
    big = dumps(make_command("implement", inputs={"goal": "x" * 5000}))
    agent.send(big)
    err = agent.until(lambda m: m.get("event") == "error")[-1]
    assert err["payload"]["code"] == "message_too_large" and err["payload"]["size"] == len(big)
    agent.send(b"nope")
    assert agent.until(lambda m: m.get("event") == "error")[-1]["payload"]["code"] == "invalid_command"


def test_builder_without_model_fails_cleanly_with_terminal_event(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    cmd = make_command("implement")
    got = agent.run(cmd)
    err, done = events(got, "error")[-1], events(got, "builder.completed")[-1]
    assert err["payload"]["code"] == "model_not_configured"
    assert done["payload"]["tests"]["status"] == "fail"
    assert "model_not_configured" in done["payload"]["summary"]
    assert [e["event"] for e in events(got)] == ["error", "builder.completed"]
    busy = [m for m in got if m.get("kind") == "heartbeat" and m["status"] == "busy"]
    assert busy and busy[0]["task_id"] == cmd["task_id"]
    agent.until(lambda m: m.get("kind") == "heartbeat" and m["status"] == "ready")


def test_orchestration_failure_is_a_single_error_event(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("orchestration")
    got = agent.run(make_command("intake", inputs={"user_instruction": "x"}))
    assert [e["event"] for e in events(got)] == ["error"]
    assert agent.proc.poll() is None


def test_reviewer_unrecoverable_failure_exits_nonzero(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("reviewer")
    got = agent.run(make_command("review"))
    assert events(got, "error")[-1]["payload"]["code"] == "model_not_configured"
    assert agent.proc.wait(10) == 3


def test_reviewer_keeps_serving_when_asked(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("spec_maintainer", "--keep-serving-on-failure")
    agent.run(make_command("update_spec"))
    agent.send(b"{}")
    assert agent.until(lambda m: m.get("event") == "error")[-1]["payload"]["code"] == "invalid_command"


def test_version_mismatch_is_refused_with_both_snapshots(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    agent.run(make_command("implement", snapshot="snap-aaaaaaaaaaaa"))
    got = agent.run(make_command("implement", task_id="T-2", snapshot="snap-bbbbbbbbbbbb"))
    err = events(got, "error")[-1]["payload"]
    assert err["code"] == "version_mismatch"
    assert err["expected_snapshot"] == "snap-aaaaaaaaaaaa" and err["observed_snapshot"] == "snap-bbbbbbbbbbbb"
    assert events(got, "builder.completed")[-1]["payload"]["tests"]["status"] == "fail"


def test_expired_deadline_fails_without_work(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    got = agent.run(make_command("implement", deadline="2001-01-01T00:00:00.123456789Z"))
    assert events(got, "error")[-1]["payload"]["code"] == "deadline_exceeded"


def test_heartbeats_flow_at_the_interval(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    t0 = time.monotonic()
    agent.until(lambda m: m.get("kind") == "heartbeat" and m["seq"] >= 6, timeout=10)
    assert time.monotonic() - t0 < 5


def test_eof_stops_with_stopping_heartbeat_and_exit_zero(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("builder")
    t0 = time.monotonic()
    agent.proc.stdin.close()
    got = agent.until(lambda m: m.get("status") == "stopping", timeout=5)
    assert got[-1]["kind"] == "heartbeat"
    assert agent.proc.wait(5) == 0
    assert time.monotonic() - t0 < 5


def test_sigterm_stops_promptly(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("reviewer")
    t0 = time.monotonic()
    agent.proc.send_signal(signal.SIGTERM)
    agent.until(lambda m: m.get("status") == "stopping", timeout=5)
    assert agent.proc.wait(5) == 0
    assert time.monotonic() - t0 < 5


def test_agent_exits_when_parent_dies(tmp_path: Path) -> None:
    # A shell parent that starts the agent in the background, prints its pid, then exits.
    script = (f"{sys.executable} -m agent stdio --role builder --workspace {tmp_path} "
              f"--heartbeat-interval 0.2 < /dev/zero-never > /dev/null 2>&1 & echo $!; sleep 1.5")
    fifo = tmp_path / "in"
    os.mkfifo(fifo)
    holder = os.open(fifo, os.O_RDWR)  # keeps stdin open so only parent death can stop it
    out = subprocess.run(["sh", "-c", script.replace("/dev/zero-never", str(fifo))], capture_output=True, text=True)
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 8
    alive = True
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            alive = False
            break
        time.sleep(0.1)
    os.close(holder)
    assert not alive, "agent kept running after its parent died"


@pytest.mark.parametrize("args, env, needle", [
    (["--role", "wizard"], {}, "invalid choice: 'wizard'"),
    ([], {"AGENT_TYPE": "wizard"}, "AGENT_TYPE='wizard' is not a role"),
    ([], {}, "no role given: pass --role ROLE or set the environment variable AGENT_TYPE=ROLE"),
    (["--role", "builder", "--workspace", "/does/not/exist"], {}, "workspace does not exist"),
    (["--role", "builder", "--replay", "/no/such/file.jsonl"], {}, "--replay file not found"),
    (["--role", "builder", "--heartbeat-interval", "0"], {}, "must be > 0"),
])
def test_invalid_settings_exit_2_with_one_stderr_line_and_no_stdout(tmp_path: Path, args, env, needle) -> None:  # type: ignore[no-untyped-def]
    full_env = {k: v for k, v in os.environ.items() if k != "AGENT_TYPE"}
    proc = subprocess.run([sys.executable, "-m", "agent", "stdio", *args], capture_output=True, text=True,
                          env={**full_env, **env}, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=20)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert needle in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_role_and_workspace_from_environment(tmp_path: Path) -> None:
    env = {**os.environ, "AGENT_TYPE": "reviewer", "LUALLM_AGENT_WORKSPACE": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "agent", "stdio"], input=b"", capture_output=True, env=env, timeout=20)
    assert proc.returncode == 0
    first = orjson.loads(proc.stdout.splitlines()[0])
    assert_wire_valid(first)
    assert first["agent"]["agent_type"] == "reviewer"
    assert (tmp_path / "logs" / "luallm-agent" / "audit.jsonl").is_file()


def test_heartbeat_interval_from_environment(tmp_path: Path) -> None:
    env = {**os.environ, "AGENT_TYPE": "builder", "LUALLM_AGENT_HEARTBEAT_INTERVAL": "nope"}
    proc = subprocess.run([sys.executable, "-m", "agent", "stdio", "--workspace", str(tmp_path)], input=b"",
                          capture_output=True, env=env, timeout=20)
    assert proc.returncode == 2 and proc.stdout == b"" and b"LUALLM_AGENT_HEARTBEAT_INTERVAL" in proc.stderr
