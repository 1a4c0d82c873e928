"""One redaction rule, end to end: a secret from a command's inputs reaches no output of the agent.

The secret travels through the prompt, a Lua plan (log, progress, result), the receipt and a
`--record` recording; then the recording replays in a fresh workspace. The role is orchestration,
whose intake answers in a plan and (without expected outputs) writes no file of its answer, so the
secret may stay in it. (The builder's replies: test_roles_e2e.py, with a spilled intake's fields;
test_transport.py checks that a spill is handed the redacted message.)
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
  return {plan_file = "PLAN.md", confidence = 0.5, tasks = {},
          notes = "used " .. t}
end
```'''


def _command() -> dict:  # type: ignore[type-arg]
    discovery = {"root": "/abs/root", "strategy": "heuristic", "search_paths": ["."],
                 "candidates": [{"path": "PLAN.md", "score": 0.9, "reason": "name", "headings": ["Plan"]}]}
    return make_command("intake", task_id="T-secret",
                        inputs={"user_instruction": f"deploy using {SECRET} from the inputs", "discovery": discovery,
                                "deploy": {"deploy_token": SECRET}})


def _workspace(ws: Path) -> Path:
    ws.mkdir()
    (ws / "PLAN.md").write_text("# Plan\n- deploy\n")
    return ws


def _everything_written(ws: Path, tmp_path: Path, rec: Path) -> dict[str, bytes]:
    files = {str(p): p.read_bytes() for p in ws.rglob("*") if p.is_file()}
    files.update({str(p): p.read_bytes() for p in tmp_path.glob("stderr-*.txt")})
    files[str(rec)] = rec.read_bytes()
    return files


def test_input_secret_reaches_no_output_and_the_recording_replays(spawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ws, rec = _workspace(tmp_path / "ws"), tmp_path / "rec" / "responses.jsonl"
    rec.parent.mkdir()  # --record never creates directories
    agent = spawn("orchestration", "--answers", "plan", "--record", str(rec), workspace=ws, replies=[PLAN])
    got = agent.run(_command())
    done = events(got, "orchestration.proposed_tasks")[-1]
    assert done["payload"]["notes"] == "used [REDACTED]", done
    assert b"token [REDACTED] accepted" in (ws / "logs/luallm-agent/audit.jsonl").read_bytes()
    assert got and SECRET.encode() not in b"".join(agent.raw_lines)
    agent.proc.stdin.close()
    assert agent.proc.wait(10) == 0

    written = _everything_written(ws, tmp_path, rec)
    kinds = {"audit": "audit.jsonl", "plan record": "/plans/", "receipt": "receipts/",
             "recording": "responses.jsonl", "stderr": "stderr-"}
    for kind, needle in kinds.items():  # each place was really written, with the secret masked
        assert any(needle in name and b"[REDACTED]" in data for name, data in written.items()), kind
    leaks = [name for name, data in written.items() if SECRET.encode() in data]
    assert leaks == []

    fresh = _workspace(tmp_path / "ws2")
    again = spawn("orchestration", "--answers", "plan", "--replay", str(rec), workspace=fresh).run(_command())
    assert events(again, "orchestration.proposed_tasks")
    assert not [e for e in events(again, "error")], events(again, "error")
