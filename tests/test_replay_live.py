"""`replay` for people: events stream as they arrive, a status line while waiting, honest exit codes."""

from __future__ import annotations

import io
import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

import orjson
from support import make_command

from agent.cli.transcript import PlainView, summary_lines
from agent.conductor import load_script, run_script

GATE_SCRIPT = """\
import pathlib, sys, time
gate = pathlib.Path(sys.argv[1])
end = time.time() + 60
while not gate.exists() and time.time() < end:
    time.sleep(0.05)
print("Ran 1 test in 0.001s\\n\\nOK" if gate.exists() else "gate never opened")
sys.exit(0 if gate.exists() else 1)
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LUALLM_AGENT_"))}


def _script(path: Path, *cmds: dict) -> Path:  # type: ignore[type-arg]
    path.write_bytes(b"".join(orjson.dumps(c) + b"\n" for c in cmds))
    return path


def _builder_reply(summary: str = "wrote f") -> str:
    return f"{summary}\n\nf.txt\n```\nhi\n```\n"


class LineReader:
    """Lines of a child's stdout with the time each arrived, read without blocking forever."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.proc, self.buf, self.lines = proc, b"", []  # type: ignore[var-annotated]
        self.sel = selectors.DefaultSelector()
        self.sel.register(proc.stdout, selectors.EVENT_READ)

    def until(self, needle: str, timeout: float) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for line in self.lines:
                if needle in line:
                    return line
            if self.sel.select(timeout=0.2):
                chunk = os.read(self.proc.stdout.fileno(), 65536)  # type: ignore[union-attr]
                if not chunk:
                    break
                self.buf += chunk
                *done, self.buf = self.buf.split(b"\n")
                self.lines += [d.decode() for d in done]
        raise AssertionError(f"{needle!r} not seen within {timeout}s; got:\n" + "\n".join(self.lines))


def test_events_are_printed_before_the_terminal_event_arrives(tmp_path: Path) -> None:
    """The builder's tests wait on a gate the test opens only after the transcript showed progress:
    if events were held back until the terminal event, the progress line could never be seen."""
    ws, scripted = tmp_path / "ws", tmp_path / "scripted"
    ws.mkdir()
    scripted.mkdir()
    (scripted / "builder.json").write_text(json.dumps([_builder_reply()]))
    # Inside the workspace: the test command runs in the OS sandbox, which reads nothing else there.
    (ws / "gate.py").write_text(GATE_SCRIPT)
    gate = ws / "GATE"
    commands = _script(tmp_path / "commands.ndjson", make_command("implement", task_id="T-1"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "replay", str(commands), "--workspace", str(ws), "--scripted-dir",
         str(scripted), "--test-command", f"{sys.executable} {ws / 'gate.py'} {gate}",
         "--heartbeat-interval", "0.3", "--status-every", "1",
         # the gate holds every test run, the one before the change that write_goal_tests needs too
         "--disable-repair", "write_goal_tests"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    try:
        out = LineReader(proc)
        out.until("→ builder         implement T-1", 30)
        out.until("← artifact.produced  f.txt", 30)
        out.until("← builder.progress  testing: running the tests", 30)
        # Silent while the tests run: a plain status line names the command, time and last heartbeat.
        status = out.until("    … builder implement T-1", 30)
        assert " s · heartbeat busy " in status
        assert not any("builder.completed" in line for line in out.lines)
        gate.touch()
        out.until("← builder.completed  tests=", 30)
        out.until("✓ builder.completed after", 30)
        out.until("1 commands, 0 without a successful terminal event", 30)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_replay_exits_1_and_names_each_command_that_did_not_succeed(tmp_path: Path) -> None:
    ws, scripted = tmp_path / "ws", tmp_path / "scripted"
    ws.mkdir()
    scripted.mkdir()
    # The builder's only reply is not an answer (no repairs): builder.completed with status failed.
    (scripted / "builder.json").write_text(json.dumps(["I refuse to answer in JSON."]))
    commands = _script(tmp_path / "commands.ndjson",
                       make_command("implement", task_id="T-1"),
                       make_command("review", task_id="T-2"),  # no reviewer replies: model error
                       make_command("intake", task_id="T-3", inputs={"user_instruction": "x"}))
    proc = subprocess.run([sys.executable, "-m", "agent", "replay", str(commands), "--workspace", str(ws),
                           "--scripted-dir", str(scripted), "--max-repairs", "0"],
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert "3 commands, 3 without a successful terminal event" in out
    assert "✗ T-1 implement (builder): builder.completed status failed: invalid_model_response" in out
    assert "✗ T-2 review (reviewer): error model_not_configured" in out
    assert "✗ T-3 intake (orchestration): error model_not_configured" in out


def test_an_agent_that_exits_without_a_terminal_event_is_a_failure(tmp_path: Path) -> None:
    quitter = ("import sys; print('{\"kind\": \"heartbeat\", \"status\": \"ready\"}', flush=True); "
               "sys.stdin.readline(); sys.stderr.write('boom: gave up\\n')")
    commands = _script(tmp_path / "c.ndjson", make_command("implement", task_id="T-9"))
    out = io.StringIO()
    results = run_script(load_script(commands), lambda role: [sys.executable, "-c", quitter], PlainView(out))
    assert [(r.task_id, r.ok) for r in results] == [("T-9", False)]
    assert results[0].reason == "the builder agent exited (code 0) without a terminal event: boom: gave up"
    assert "✗ no terminal event" in out.getvalue()
    assert summary_lines(results, "ws")[1] == f"  ✗ T-9 implement (builder): {results[0].reason}"


def test_an_agent_that_cannot_start_fails_its_commands_with_its_own_words(tmp_path: Path) -> None:
    dies = "import sys; sys.stderr.write('luallm-agent stdio: no role given\\n'); sys.exit(2)"
    commands = _script(tmp_path / "c.ndjson", make_command("review", task_id="T-1"), make_command("review", task_id="T-2"))
    results = run_script(load_script(commands), lambda role: [sys.executable, "-c", dies], PlainView(io.StringIO()))
    assert [r.ok for r in results] == [False, False]
    assert results[0].reason == ("the reviewer agent exited with code 2 before it was ready: "
                                 "luallm-agent stdio: no role given")


def test_replay_passes_every_agent_option_through() -> None:
    """Each flag of add_agent_options (also one added later) reaches the agents replay starts."""
    import argparse

    from agent.cli import build_parser
    from agent.cli.options import add_agent_options, agent_option_argv

    probe = argparse.ArgumentParser(add_help=False)
    add_agent_options(probe)
    per_agent = {"--workspace", "--scripted-replies", "--heartbeat-interval", "--keep-serving-on-failure"}
    argv = ["replay", "c.ndjson"]
    expected = []
    for action in probe._actions:
        flag = action.option_strings[0]
        if flag in per_agent:
            continue
        if action.nargs == 0:
            argv.append(flag)
            expected.append(flag)
        else:
            numeric = isinstance(action.default, int | float) and not isinstance(action.default, bool)
            if action.choices:
                value = action.choices[-1]
            elif numeric:
                value = action.default * 2
            elif action.type is not None and action.default is None:
                value = "2048"  # a numeric option whose default is "unset" (e.g. per-role --max-tokens)
            else:
                value = "x"
            if value == action.default:
                continue
            argv += [flag, str(value)]
            expected += [flag, str(value)]
    passed = agent_option_argv(build_parser().parse_args(argv))
    assert sorted(passed) == sorted(expected)
