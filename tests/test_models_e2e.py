"""End-to-end: the stdio agent against a real HTTP endpoint, a luallm fake, record and replay."""

import json
import os
import sys
from pathlib import Path

from fake_openai import FakeOpenAI, Raw, Stream, gzip_bomb
from support import events, make_command

REVIEW = json.dumps({"status": "approved", "summary": "fine", "findings": []})


def test_openai_endpoint_with_retry_after_503(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    fake = FakeOpenAI([(503, {"error": "busy"}, {"Retry-After": "0"}), REVIEW])
    with fake.running():
        agent = spawn("reviewer", "--base-url", fake.base_url, "--model", "fake-model",
                      env={"OPENAI_API_KEY": "sk-test-abcdef123456"})
        done = events(agent.run(make_command("review")), "review.completed")[-1]
    assert done["status"] == "approved"
    assert done["payload"]["usage"] == {"calls": 1, "prompt_tokens": 100, "completion_tokens": 20,
                                        "models": ["fake-model"]}
    assert len(fake.requests) == 2  # the 503 was retried
    assert fake.requests[-1]["headers"]["Authorization"] == "Bearer sk-test-abcdef123456"
    audit = (workspace / "logs/luallm-agent/audit.jsonl").read_text()
    assert "model_attempt" in audit and "sk-test-abcdef123456" not in audit


def test_record_then_replay_offline(spawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rec = tmp_path / "rec.jsonl"
    ws1, ws2 = tmp_path / "one", tmp_path / "two"
    fake = FakeOpenAI([REVIEW])
    with fake.running():
        a = spawn("reviewer", "--base-url", fake.base_url, "--model", "fake-model", "--record", str(rec),
                  workspace=ws1)
        first = events(a.run(make_command("review")), "review.completed")[-1]
    line = json.loads(rec.read_text().splitlines()[0])
    assert line["digest"].startswith("sha256:") and line["reply"]["text"] == REVIEW
    # The server is gone: replay must not need it.
    b = spawn("reviewer", "--replay", str(rec), workspace=ws2)
    second = events(b.run(make_command("review")), "review.completed")[-1]
    assert first["payload"]["summary"] == second["payload"]["summary"] and second["status"] == "approved"


def test_replay_miss_fails_loudly_naming_the_nearest(spawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rec = tmp_path / "rec.jsonl"
    fake = FakeOpenAI([REVIEW])
    with fake.running():
        spawn("reviewer", "--base-url", fake.base_url, "--model", "m", "--record", str(rec),
              workspace=tmp_path / "one").run(make_command("review"))
    b = spawn("reviewer", "--replay", str(rec), "--keep-serving-on-failure", workspace=tmp_path / "two")
    err = events(b.run(make_command("review", inputs={"goal": "something else"})), "error")[-1]["payload"]
    assert err["code"] == "replay_miss" and err["nearest"] == json.loads(rec.read_text())["digest"]
    assert "first difference" in err["message"]


def _fake_luallm(tmp_path: Path, servers: list) -> Path:  # type: ignore[type-arg]
    """A `luallm` executable with the real CLI's shapes: `status --json`, `{}` for empty lists.

    Its status comes from `servers.json` next to it, so a test can change it mid-run."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "servers.json").write_text(json.dumps(servers))
    script = bindir / "luallm"
    script.write_text(f"""#!{sys.executable}
import json, sys
args = sys.argv[1:]
if args[:2] == ["status", "--json"]:
    s = json.load(open({str(bindir / "servers.json")!r}))
    print(json.dumps({{"version": "0.9.0", "servers": s or {{}}}}))
elif args[:2] == ["notes", "--json"]:
    print("{{}}")
elif args[:1] == ["notes"] and args[-1] == "--json":
    print(json.dumps({{"name": args[1], "content": None, "notes_path": "/tmp/x.md"}}))
elif args[:2] == ["list", "--json"]:
    print(json.dumps([{{"name": "small", "size": 1, "quantization": "q4", "last_run": None}}]))
else:
    print("error: unexpected " + " ".join(args))
    sys.exit(1)
""")
    script.chmod(0o755)
    return bindir


def _config(tmp_path: Path, binary: Path, fallback_url: str) -> Path:
    cfg = {"providers": {
        "small": {"luallm_model": "small"},
        "backup": {"base_url": fallback_url, "model": "backup-model", "locality": "cloud"}},
        "luallm": {"binary": str(binary)}, "retry": {"attempts": 1, "base_s": 0.01, "cap_s": 0.01},
        "routing": {"policy": "local-first"}}
    path = tmp_path / "models.json"
    path.write_text(json.dumps(cfg))
    return path


def test_luallm_model_serves_through_its_status_port(spawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fake = FakeOpenAI([REVIEW], model="small")
    with fake.running():
        servers = [{"model": "small", "state": "running", "port": fake.port, "pid": os.getpid(), "mode": "server",
                    "started_at": "2026-11-23T10:00:00Z"}]
        bindir = _fake_luallm(tmp_path, servers)
        cfg = _config(tmp_path, bindir / "luallm", "http://127.0.0.1:9/v1")
        agent = spawn("reviewer", "--config", str(cfg))
        done = events(agent.run(make_command("review")), "review.completed")[-1]
    assert done["payload"]["usage"]["models"] == ["small"]


def test_crashed_local_model_falls_back_and_suggests_a_note(spawn, tmp_path: Path, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    backup = FakeOpenAI([REVIEW], model="backup-model")
    small = FakeOpenAI([(500, {"error": "out of memory"})], model="small")
    with backup.running(), small.running():
        running = {"model": "small", "state": "running", "port": small.port, "pid": 4242, "mode": "server",
                   "started_at": "2026-11-23T10:00:00Z"}
        bindir = _fake_luallm(tmp_path, [running])
        # Our request kills the model: from then on luallm reports it stopped with exit code 137.
        small.on_request = lambda _body: (bindir / "servers.json").write_text(json.dumps(
            [{**running, "state": "stopped", "stopped_at": "2026-11-23T10:01:00Z", "exit_code": 137}]))
        cfg = _config(tmp_path, bindir / "luallm", backup.base_url)
        agent = spawn("reviewer", "--config", str(cfg))
        done = events(agent.run(make_command("review")), "review.completed")[-1]
        agent.close()
    assert done["payload"]["usage"]["models"] == ["backup-model"]
    assert "model_fallback" in (workspace / "logs/luallm-agent/audit.jsonl").read_text()
    stderr = "".join(p.read_text() for p in tmp_path.glob("stderr-*.txt"))
    assert "luallm notes add small" in stderr


def test_stopped_local_model_without_fallback_names_the_start_command(spawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    servers = [{"model": "small", "state": "stopped", "port": 9, "pid": 1, "mode": "server",
                "started_at": "2026-11-23T10:00:00Z", "stopped_at": "2026-11-23T10:05:00Z", "exit_code": 137}]
    bindir = _fake_luallm(tmp_path, servers)
    cfg = {"providers": {"small": {"luallm_model": "small"}}, "luallm": {"binary": str(bindir / "luallm")}}
    (tmp_path / "m.json").write_text(json.dumps(cfg))
    agent = spawn("orchestration", "--config", str(tmp_path / "m.json"))
    err = events(agent.run(make_command("intake", inputs={"user_instruction": "x"})), "error")[-1]["payload"]
    assert err["code"] == "model_not_running" and "luallm start small" in json.dumps(err)


def test_invalid_config_is_a_startup_error(tmp_path: Path) -> None:
    import subprocess

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"providers": {"x": {"base_url": "http://h/v1", "model": "m", "api_key": "sk-literal"}}}))
    proc = subprocess.run([sys.executable, "-m", "agent", "stdio", "--role", "builder", "--workspace", str(tmp_path),
                           "--config", str(bad)], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    assert proc.returncode == 2 and proc.stdout == "" and "invalid config" in proc.stderr


def test_json_answers_send_the_role_schema_as_response_format(spawn) -> None:  # type: ignore[no-untyped-def]
    fake = FakeOpenAI([REVIEW])
    with fake.running():
        agent = spawn("reviewer", "--base-url", fake.base_url, "--model", "m", "--answers", "json")
        assert events(agent.run(make_command("review")), "review.completed")[-1]["status"] == "approved"
    fmt = fake.requests[0]["body"]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"]["title"] == "Reviewer answer"
    system = fake.requests[0]["body"]["messages"][0]["content"]
    assert "Answer with exactly one JSON object" in system and "```lua" not in system


def test_plan_answers_send_no_schema(spawn) -> None:  # type: ignore[no-untyped-def]
    fake = FakeOpenAI([REVIEW])
    with fake.running():
        spawn("reviewer", "--base-url", fake.base_url, "--model", "m", "--answers", "plan").run(make_command("review"))
    assert "response_format" not in fake.requests[0]["body"]
    assert "function run(context)" in fake.requests[0]["body"]["messages"][0]["content"]


def test_default_auto_answers_send_the_schema_to_a_server_of_unknown_capabilities(spawn) -> None:  # type: ignore[no-untyped-def]
    fake = FakeOpenAI([REVIEW])
    with fake.running():
        spawn("reviewer", "--base-url", fake.base_url, "--model", "m").run(make_command("review"))
    fmt = fake.requests[0]["body"]["response_format"]
    assert fmt["json_schema"]["schema"]["title"] == "Reviewer answer"


def test_repairs_resend_only_the_start_of_a_rejected_reply(spawn) -> None:  # type: ignore[no-untyped-def]
    # 20 kB of notes that never repeat (a run of one character that long is a loop, stopped in the stream)
    notes = " ".join(str(i) for i in range(4_500))
    fake = FakeOpenAI(['{"status": "maybe", "notes": "' + notes + '"}', REVIEW])
    with fake.running():
        agent = spawn("reviewer", "--base-url", fake.base_url, "--model", "m", "--max-tokens", "777")
        assert events(agent.run(make_command("review")), "review.completed")[-1]["status"] == "approved"
    second = fake.requests[1]["body"]
    rejected, feedback = second["messages"][-2], second["messages"][-1]
    assert rejected["role"] == "assistant" and len(rejected["content"]) < 2000 and "omitted" in rejected["content"]
    assert "rejected (invalid_model_response)" in feedback["content"] and "'notes' was unexpected" in feedback["content"]
    assert second["max_tokens"] == 777


def test_slow_streaming_answer_outlasts_the_model_timeout(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # About 2 s of steady streaming against a 1 s first-byte window and a 1 s stall limit: the old
    # fixed read timeout would have cut it; a stream that progresses is bounded only by the deadline.
    pieces = [REVIEW[i:i + 5] for i in range(0, len(REVIEW), 5)]
    fake = FakeOpenAI([Stream(pieces, every_s=2.0 / len(pieces))])
    with fake.running():
        agent = spawn("reviewer", "--base-url", fake.base_url, "--model", "m", "--model-timeout", "1",
                      "--model-stall-s", "1")
        done = events(agent.run(make_command("review")), "review.completed")[-1]
    assert done["status"] == "approved"
    body = fake.requests[0]["body"]
    assert body["stream"] is True and body["max_tokens"] == 1024  # the reviewer's own size
    call = [json.loads(line) for line in (workspace / "logs/luallm-agent/audit.jsonl").read_text().splitlines()
            if '"model_call"' in line][-1]
    assert call["finish_reason"] == "stop" and call["max_tokens"] == 1024 and call["latency_ms"] > 1500


def test_oversized_response_is_a_model_error_naming_the_cap(spawn) -> None:  # type: ignore[no-untyped-def]
    fake = FakeOpenAI([Raw(200, {"Content-Type": "application/json", "Content-Encoding": "gzip"},
                           gzip_bomb(64 * 1024 * 1024))])
    with fake.running():
        agent = spawn("reviewer", "--base-url", fake.base_url, "--model", "m", "--max-response-bytes", "100000",
                      "--keep-serving-on-failure")
        err = events(agent.run(make_command("review")), "error")[-1]["payload"]
    assert err["code"] == "model_error" and err["reason"] == "response_too_large"
    assert "100000 bytes" in err["message"] and err["max_response_bytes"] == 100000


def test_max_tokens_flag_sets_every_role(spawn) -> None:  # type: ignore[no-untyped-def]
    fake = FakeOpenAI([REVIEW])
    with fake.running():
        spawn("reviewer", "--base-url", fake.base_url, "--model", "m", "--max-tokens", "333").run(make_command("review"))
    assert fake.requests[0]["body"]["max_tokens"] == 333
