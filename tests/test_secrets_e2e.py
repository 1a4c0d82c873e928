"""One redaction rule, end to end: a secret from a command's inputs reaches no output of the agent.

The secret travels through the prompt, a Lua plan (log, progress, result), an oversize payload that
spills, the receipt and a `--record` recording; then the recording replays in a fresh workspace.
"""

from __future__ import annotations

from pathlib import Path

from support import events, make_command

SECRET = "tok-SECRET-e2e-7f3a9c"
PLAN = '''```lua
function run(context)
  local t = context.inputs.deploy.deploy_token
  tools.log("deploying with " .. t)
  tools.progress("token " .. t .. " accepted")
  return {summary = "used " .. t .. " " .. string.rep("x", 300000), no_changes_reason = "a deploy writes no files"}
end
```'''


def _command() -> dict:  # type: ignore[type-arg]
    return make_command("implement", task_id="T-secret",
                        inputs={"goal": f"deploy using {SECRET} from the inputs",
                                "deploy": {"deploy_token": SECRET}})


def _everything_written(ws: Path, tmp_path: Path, rec: Path) -> dict[str, bytes]:
    files = {str(p): p.read_bytes() for p in ws.rglob("*") if p.is_file()}
    files.update({str(p): p.read_bytes() for p in tmp_path.glob("stderr-*.txt")})
    files[str(rec)] = rec.read_bytes()
    return files


def test_input_secret_reaches_no_output_and_the_recording_replays(spawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ws, rec = tmp_path / "ws", tmp_path / "rec" / "responses.jsonl"
    rec.parent.mkdir()  # --record never creates directories
    agent = spawn("builder", "--answers", "plan", "--record", str(rec), workspace=ws, replies=[PLAN])
    got = agent.run(_command())
    done = events(got, "builder.completed")[-1]
    assert done["status"] != "failed", done
    assert any("[REDACTED] accepted" in str(e["payload"]) for e in events(got, "builder.progress"))
    assert got and SECRET.encode() not in b"".join(agent.raw_lines)
    agent.proc.stdin.close()
    assert agent.proc.wait(10) == 0

    written = _everything_written(ws, tmp_path, rec)
    kinds = {"audit": "audit.jsonl", "plan record": "/plans/", "spill": "/spill/", "receipt": "receipts/",
             "recording": "responses.jsonl", "stderr": "stderr-"}
    for kind, needle in kinds.items():  # each place was really written, with the secret masked
        assert any(needle in name and b"[REDACTED]" in data for name, data in written.items()), kind
    leaks = [name for name, data in written.items() if SECRET.encode() in data]
    assert leaks == []

    fresh = tmp_path / "ws2"
    again = spawn("builder", "--answers", "plan", "--replay", str(rec), workspace=fresh).run(_command())
    assert events(again, "builder.completed")[-1]["status"] == done["status"]
    assert not [e for e in events(again, "error")], events(again, "error")
