"""End-to-end: Lua plans through `luallm-agent stdio` for every role that answers in plans, the
writing tools through `luallm-agent plan`, and hostile plans contained."""

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from support import events, make_command


def lua(body: str) -> str:
    return f"```lua\n{body}\n```"


APPROVED = json.dumps({"status": "approved", "summary": "ok", "findings": []})


def run_plan_cli(workspace: Path, source: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`luallm-agent plan` on `source` (every tool, the writing ones too): its printed JSON."""
    plan = workspace.parent / "plan.lua"
    plan.write_text(source)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LUALLM_AGENT_"))}
    proc = subprocess.run([sys.executable, "-m", "agent", "plan", str(plan), "--workspace", str(workspace), *args],
                          capture_output=True, text=True, timeout=60, env={**full_env, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def test_a_plan_writes_through_tools(workspace: Path) -> None:
    out = run_plan_cli(workspace, '''function run(context)
  local r = tools.write("src/hello.txt", "hello " .. context.inputs.who)
  return {summary = "wrote " .. r.path}
end''', "--input", '{"who": "T-0001"}')
    assert (workspace / "src/hello.txt").read_text() == "hello T-0001"
    assert out["result"] == {"summary": "wrote src/hello.txt"} and [a["path"] for a in out["artifacts"]] == ["src/hello.txt"]
    assert list((workspace / "logs/luallm-agent/plans").glob("*.json"))


def test_spec_maintainer_plan(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text("# S\n\n## Status\nold\n")
    plan = lua('''function run(context)
  local spec = tools.read("SPEC.md")
  local done = string.find(spec, "old", 1, true) ~= nil
  return {status = "updated", summary = "status refreshed",
          section_edits = {{section = "Status", content = done and "refreshed" or "same"}}}
end''')
    got = spawn("spec_maintainer", replies=[plan]).run(make_command("update_spec"))
    assert events(got, "spec.updated")[-1]["payload"]["answer_via"] == "lua"
    assert "## Status\n\nrefreshed" in (workspace / "SPEC.md").read_text()


def test_orchestration_plan_reads_candidates(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "PLAN.md").write_text("# Plan\n- T-9: build the thing\n")
    plan = lua('''function run(context)
  local c = context.inputs.discovery.candidates[1].path
  local text = tools.read(c)
  local id = string.match(text, "(T%-%d+)")
  return {plan_file = c, confidence = 0.75, tasks = {{id = id, title = "build the thing", files = {}}}}
end''')
    inputs = {"user_instruction": "go", "discovery": {"root": "/r", "candidates": [
        {"path": "PLAN.md", "score": 0.9, "reason": "name", "headings": []}]}}
    got = spawn("orchestration", replies=[plan]).run(make_command("intake", inputs=inputs))
    tasks = events(got, "orchestration.proposed_tasks")[-1]["payload"]["derived_tasks"]
    assert tasks == [{"id": "T-9", "title": "build the thing", "files": []}]


def test_reviewer_plan(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    plan = lua('''function run(context)
  local hits = tools.grep("def add", {globs = {"*.py"}})
  if #hits == 1 then return {status = "approved", summary = "add found", findings = {}} end
  return {status = "changes_requested", summary = "no add", findings = {{path = "calc.py", comment = "add it"}}}
end''')
    got = spawn("reviewer", replies=[plan]).run(make_command("review"))
    done = events(got, "review.completed")[-1]
    assert done["status"] == "approved" and done["payload"]["findings"] == []


def test_invalid_plan_is_sent_back_with_the_exact_error(spawn) -> None:  # type: ignore[no-untyped-def]
    bad = lua("function run(context)\n  return {status = \"approved\", summary = undefined_helper(), findings = {}}\nend")
    good = json.dumps({"status": "approved", "summary": "fixed", "findings": []})
    agent = spawn("reviewer", "--answers", "plan", replies=[bad, good])
    done = events(agent.run(make_command("review")), "review.completed")[-1]
    assert done["payload"]["summary"] == "fixed"
    audit = Path(agent.proc.args[agent.proc.args.index("--workspace") + 1]) / "logs/luallm-agent/audit.jsonl"
    rejected = [json.loads(line) for line in audit.read_text().splitlines() if '"answer_rejected"' in line]
    assert rejected[0]["code"] == "plan_invalid" and "undefined_helper" in rejected[0]["error"]


def test_hostile_plans_are_contained_and_heartbeats_stay_on_time(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    spin = lua("function run(context)\n  while true do pcall(function() while true do end end) end\nend")
    escape = lua('function run(context)\n  return {summary = os.execute("id")}\nend')
    agent = spawn("reviewer", "--answers", "plan", "--plan-wall-s", "1.5", "--max-repairs", "0",
                  "--keep-serving-on-failure", replies=[spin, escape, APPROVED])
    agent.send(make_command("review", task_id="T-spin"))
    got = agent.until(lambda m: m.get("event") == "error", timeout=30)
    code = events(got, "error")[-1]["payload"]["code"]
    assert code in ("plan_timeout", "plan_instruction_limit")
    beats = [m for m in got if m.get("kind") == "heartbeat"]
    assert len(beats) >= 2  # busy, then periodic beats while the plan spun
    seqs = [b["seq"] for b in beats]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    agent.send(make_command("review", task_id="T-escape"))
    got = agent.until(lambda m: m.get("event") == "error", timeout=30)
    err = events(got, "error")[-1]["payload"]
    assert err["code"] == "sandbox_violation" and "os.execute" in err["message"] and err["line"] == 2
    done = events(agent.run(make_command("review", task_id="T-after")), "review.completed")[-1]
    assert done["payload"]["summary"] == "ok"  # still serving


def test_heartbeat_gaps_while_a_plan_spins(spawn) -> None:  # type: ignore[no-untyped-def]
    spin = lua("function run(context)\n  local x = 0\n  while true do x = x + 1 end\nend")
    agent = spawn("reviewer", "--answers", "plan", "--plan-wall-s", "3", "--max-repairs", "0",
                  "--keep-serving-on-failure", replies=[spin])
    agent.send(make_command("review"))
    arrivals = []
    end = time.monotonic() + 30
    while time.monotonic() < end:
        msg = agent.messages.get(timeout=10)
        if msg and msg.get("kind") == "heartbeat":
            arrivals.append(time.monotonic())
        if msg and msg.get("event") == "error":
            break
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    assert len(arrivals) >= 4 and max(gaps) < 0.5 + 1.0  # interval 0.5 s (+1 s allowed)


def test_spec_maintainer_plan_cannot_bypass_the_section_rule(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    spec = "# S\n\n## Behaviour\nkeep me\n\n## Status\nold\n"
    (workspace / "SPEC.md").write_text(spec)
    plan = lua('''function run(context)
  local w = tools.write("SPEC.md", "# hijacked")
  return {status = "updated", summary = "tried: " .. tostring(w.code),
          section_edits = {{section = "Status", content = "new"}}}
end''')
    got = spawn("spec_maintainer", replies=[plan]).run(make_command("update_spec"))
    done = events(got, "spec.updated")[-1]
    assert done["payload"]["summary"] == "tried: tool_not_allowed"
    text = (workspace / "SPEC.md").read_text()
    assert "keep me" in text and "hijacked" not in text and "## Status\n\nnew" in text


def test_a_plan_cannot_forge_a_receipt(workspace: Path) -> None:
    out = run_plan_cli(workspace, '''function run(context)
  local w = tools.write("receipts/T-0001/.index/forged.json", "[]")
  return {summary = "forge: " .. tostring(w.code)}
end''')
    assert out["result"]["summary"] == "forge: path_rejected"
    assert not (workspace / "receipts/T-0001/.index/forged.json").exists()


def test_a_plan_write_and_edit_keep_file_modes(workspace: Path) -> None:
    (workspace / "run.sh").write_text("#!/bin/sh\necho old\n")
    (workspace / "run.sh").chmod(0o755)
    (workspace / "mod.py").write_text("X = 1\n")
    (workspace / "mod.py").chmod(0o644)
    plan = lua('''function run(context)
  tools.write("run.sh", "#!/bin/sh\\necho new\\n")
  tools.edit("mod.py", "X = 1", "X = 2")
  tools.write("fresh.sh", "#!/bin/sh\\n")
  return {summary = "done"}
end''')
    run_plan_cli(workspace, plan)
    assert (workspace / "run.sh").read_text() == "#!/bin/sh\necho new\n"
    assert (workspace / "mod.py").read_text() == "X = 2\n"
    assert stat.S_IMODE((workspace / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((workspace / "mod.py").stat().st_mode) == 0o644
    assert stat.S_IMODE((workspace / "fresh.sh").stat().st_mode) == 0o600


def test_a_plan_cannot_write_a_secret_value(workspace: Path) -> None:
    # The worker runs with a scrubbed environment: the secret values reach it in the plan request.
    secret = "sk-live-0123456789abcdef"
    plan = lua(f'''function run(context)
  local w = tools.write("leak.txt", "token={secret}")
  local ok = tools.write("fine.txt", "no secret here")
  return {{summary = "write: " .. tostring(w.code) .. ", fine: " .. tostring(ok.path)}}
end''')
    out = run_plan_cli(workspace, plan, env={"DEPLOY_TOKEN": secret})
    assert out["result"]["summary"] == "write: secret_in_artifact, fine: fine.txt"
    assert not (workspace / "leak.txt").exists() and (workspace / "fine.txt").read_text() == "no secret here"


def test_a_plan_edit_lands_in_the_confined_worker_and_a_loose_one_says_where_to_look(workspace: Path) -> None:
    text = 'def is_p(t):\n    """Same both ways."""\n    return t == t[::-1]\n'
    (workspace / "p.py").write_text(text)
    plan = lua('''function run(context)
  local loose = tools.edit("p.py", "def is_p(t):\\n    return t == t[::-1]\\n", "x")
  local r = tools.edit("p.py", "    return t == t[::-1]\\n", "    t = t.lower()\\n    return t == t[::-1]\\n")
  return {summary = loose.code .. ": " .. loose.error .. " / " .. tostring(r.replacements)}
end''')
    out = run_plan_cli(workspace, plan)
    assert out["result"]["summary"].startswith("not_found: edit: the old text is not in p.py; its first line")
    assert out["result"]["summary"].endswith(" / 1")
    assert (workspace / "p.py").read_text() == text.replace("    return", "    t = t.lower()\n    return")


def test_a_plan_whose_long_string_swallowed_its_code_is_rejected_and_costs_an_attempt(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-0.5B held to the plan grammar (run gram3): the long string's `]]` never came, so the
    # plan's own code became text and the reply ran on in prose to its token limit. The plan does not
    # compile: its Lua error goes back as it is, and the next answer is taken.
    reply = ("```lua\nfunction run(context)\n  local notes = [[\nimport a\n\n\n"
             "def test_a():\n    assert a.A == 1\n  if notes == \"\" then error(\"no notes\") end\n"
             "  return {status = \"approved\", summary = notes, findings = {}}\nend\n``\n\n"
             "This Lua plan follows the structure of the task.")
    good = json.dumps({"status": "approved", "summary": "fixed", "findings": []})
    rec = tmp_path / "rec.jsonl"
    got = spawn("reviewer", "--answers", "plan", "--record", str(rec), replies=[reply, good]).run(make_command("review"))
    done = events(got, "review.completed")[-1]
    assert done["payload"]["summary"] == "fixed" and done["payload"]["answer_via"] == "json"
    repair = json.loads(rec.read_text().splitlines()[1])["request"]["messages"][-1]["content"]
    assert repair.startswith("Your answer was rejected (plan_invalid): ") and "Hint:" not in repair
    audit = [json.loads(x) for x in (workspace / "logs/luallm-agent/audit.jsonl").read_text().splitlines()]
    assert [(a["attempt"], a["code"]) for a in audit if a["event"] == "answer_rejected"] == [(1, "plan_invalid")]


def test_a_rejected_plan_goes_back_whole_without_the_prose_around_it(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B (run gram2, held to the grammar) repaired by copying its last plan, clip mark
    # and all: the mark had fallen inside a long string, which then never closed
    content = "".join(f"line {i} of the test file\n" for i in range(120))          # ~3 KB of file content
    plan = ('function run(context)\n  local r = tools.read("missing.py")\n'
            '  if type(r) == "table" and r.error then error("read failed: " .. r.error) end\n'
            f'  local notes = [[\n{content}]]\n  return {{status = "approved", summary = notes, findings = {{}}}}\nend')
    reply = "Here is the plan.\n" + lua(plan) + "\nIt reads missing.py and notes a test." + " More prose." * 200
    good = json.dumps({"status": "approved", "summary": "fixed", "findings": []})
    rec = tmp_path / "rec.jsonl"
    agent = spawn("reviewer", "--answers", "plan", "--record", str(rec), replies=[reply, good])
    assert events(agent.run(make_command("review")), "review.completed")[-1]["payload"]["summary"] == "fixed"
    second = json.loads(rec.read_text().splitlines()[1])["request"]["messages"]
    assert second[-2] == {"role": "assistant", "content": lua(plan)}
    assert "read failed" in second[-1]["content"]


def test_a_plan_that_loops_is_stopped_and_asked_for_afresh(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-0.5B held to the plan grammar (feature-cart, runs gram6 and gram9): a long string
    # whose lines repeat until the token limit, in every run. The stream is stopped a few copies in;
    # the looped plan is an invalid answer: the question is asked afresh, with fewer tokens, under the
    # same grammar, its loop not shown back.
    from fake_openai import FakeOpenAI, Stream

    head = '```lua\nfunction run(context)\n  local notes = [[\nimport a\n\n\ndef test_a():\n'
    block = ["    assert a.f(1) == 1\n", "    assert a.f(2) == 4\n"]
    whole = (head + "".join(block) + ']]\n  return {status = "approved", summary = notes, findings = {}}\nend\n```')
    fake = FakeOpenAI([Stream([head, *block], forever=True, repeat_from=1), whole])
    fake.props = {"build_info": "b1"}               # llama.cpp: takes a GBNF grammar
    with fake.running():
        agent = spawn("reviewer", "--base-url", fake.base_url, "--model", "fake-model", "--answers", "grammar")
        done = events(agent.run(make_command("review")), "review.completed")[-1]
    assert done["status"] == "approved" and done["payload"]["answer_via"] == "lua"
    assert done["payload"]["summary"] == "import a\n\n\ndef test_a():\n" + "".join(block)
    first, second = (r["body"] for r in fake.requests)
    assert second["grammar"] == first["grammar"] and second["max_tokens"] < (first.get("max_tokens") or 10**9)
    assert [m["role"] for m in second["messages"]] == ["system", "user"]
    assert "repeated itself until it was cut off" in second["messages"][-1]["content"]
    audit = [json.loads(x) for x in (workspace / "logs/luallm-agent/audit.jsonl").read_text().splitlines()]
    stopped = [a for a in audit if a["event"] == "model_repetition_stopped"]
    assert stopped and stopped[0]["copies"] >= 6
    assert [(a["attempt"], a["code"]) for a in audit if a["event"] == "answer_rejected"] == [(1, "plan_invalid")]


def test_a_stdout_stall_is_not_charged_to_the_plan(tmp_path: Path, workspace: Path) -> None:
    # lorch stops reading stdout for 5 s while a plan that needs a fraction of its 2 s runs: the
    # agent blocks writing to stdout (heartbeats, its log lines) while the plan reports progress. The
    # plan must not time out, and the model must be asked once (the worker's own accounting of the
    # agent's blocked time: tests/plans/test_runner.py).
    import fcntl

    from support import write_replies

    plan = lua('''function run(context)
  for i = 1, 8 do tools.progress(string.rep("p", 900) .. i) end
  return {status = "approved", summary = "told its progress", findings = {}}
end''')
    replies = write_replies(tmp_path / "replies.json", [plan])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LUALLM_AGENT_"))}
    proc = subprocess.Popen([sys.executable, "-m", "agent", "stdio", "--role", "reviewer", "--workspace",
                             str(workspace), "--answers", "plan", "--plan-wall-s", "2", "--heartbeat-interval", "0.5",
                             "--scripted-replies", str(replies)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        fcntl.fcntl(proc.stdout.fileno(), 1031, 4096)  # F_SETPIPE_SZ: a small pipe fills at once
        while b'"ready"' not in proc.stdout.readline():
            pass
        proc.stdin.write(json.dumps(make_command("review")).encode() + b"\n")
        proc.stdin.flush()
        time.sleep(5)  # not reading
        got = []
        while True:
            line = proc.stdout.readline()
            assert line, "the agent ended without answering"
            got.append(json.loads(line))
            if got[-1].get("event") == "review.completed":
                break
    finally:
        proc.kill()
        proc.wait()
    done = got[-1]
    assert done["status"] == "approved", done
    audit = [json.loads(x) for x in (workspace / "logs/luallm-agent/audit.jsonl").read_text().splitlines()]
    assert not [a for a in audit if "plan_timeout" in json.dumps(a)]
    assert done["payload"]["usage"]["calls"] == 1
