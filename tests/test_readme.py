"""The README's commands and lorch.json snippet are part of the contract: they are run here."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
from support import ROOT, assert_wire_valid

README = (ROOT / "README.md").read_text()


def _lorch_config() -> dict:
    blocks = re.findall(r"```json\n(.*?)```", README, re.S)
    configs = [json.loads(b) for b in blocks if '"agents"' in b]
    assert len(configs) == 1
    return configs[0]


def test_lorch_snippet_starts_every_role_as_lorch_would(tmp_path: Path) -> None:
    config = _lorch_config()
    assert set(config["agents"]) == {"builder", "reviewer", "spec_maintainer", "orchestration"}
    for role, spec in config["agents"].items():
        cmd = list(spec["cmd"])
        if shutil.which(cmd[0]) is None:  # not on PATH in this environment: same entry point
            cmd = [sys.executable, "-m", "agent", *cmd[1:]]
        env = {**os.environ, **spec["env"], "AGENT_TYPE": role}
        proc = subprocess.run(cmd, input=b"", capture_output=True, env=env, cwd=tmp_path, timeout=30)
        assert proc.returncode == 0, proc.stderr
        lines = [orjson.loads(x) for x in proc.stdout.splitlines()]
        for msg in lines:
            assert_wire_valid(msg)
        assert [m["status"] for m in lines] == ["starting", "ready", "stopping"]
        assert lines[0]["agent"]["agent_type"] == role


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test_cmd = "python3 -m pip install -e '.[dev]' && python3 -m pytest"
    assert test_cmd in README
    assert test_cmd in (ROOT / ".ci" / "run").read_text()


def test_readme_names_the_demo_command() -> None:
    assert "python3 -m pip install -e '.[dev]' && luallm-agent demo" in README


# Commands the README shows that cannot run offline here, and why. Every other command in a
# ```sh block is run by test_every_offline_readme_command_runs, in order, in one scratch directory.
NOT_OFFLINE = [
    (re.compile(r"\bpipx? install\b|-m pip install\b"), "installs packages"),
    (re.compile(r"^python3 -m pytest\b"), "the test suite itself (CI runs it)"),
    (re.compile(r"--base-url http|^llama-server\b|^ollama\b|^vllm\b"), "needs a running model server"),
    (re.compile(r"tests/realmodel/|bench/bench_realmodel\.py"), "needs the opt-in real model (xllamacpp and a GGUF)"),
    (re.compile(r"^luallm-agent (init|doctor|run|stop|log|approvals)\b"),
     "supervised mode: writes the person's home and needs a model (tests/supervised runs each one)"),
]


def _readme_commands() -> list[str]:
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line and not line.startswith("#"):
                commands.append(line)
    return commands


def _why_not_offline(command: str) -> str | None:
    return next((why for pattern, why in NOT_OFFLINE if pattern.search(command)), None)


def test_every_offline_readme_command_runs(tmp_path: Path) -> None:
    # The recording step 1 of "Recording and replaying" would make: the demo's is such a recording.
    shutil.copy(ROOT / "fixtures" / "demo" / "responses.jsonl", tmp_path / "responses.jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LUALLM_AGENT_")) and k != "AGENT_TYPE"}
    env["TMPDIR"] = str(tmp_path)
    agent = f"{shlex.quote(sys.executable)} -m agent "
    ran = []
    for command in _readme_commands():
        if _why_not_offline(command):
            continue
        runnable = command.replace("/tmp/", f"{tmp_path}/")
        runnable = re.sub(r"(^|\|\s*)luallm-agent ", lambda m: m.group(1) + agent, runnable)
        proc = subprocess.run(["bash", "-c", runnable], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, f"README command failed: {command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        assert "Traceback" not in proc.stderr, command
        ran.append(command)
    assert any(c.startswith("luallm-agent demo") for c in ran)
    assert sum("luallm-agent stdio" in c for c in ran) == 2 and sum("luallm-agent replay" in c for c in ran) == 1
    skipped = [c for c in _readme_commands() if _why_not_offline(c)]
    assert len(ran) >= 6 and len(skipped) <= 20, (ran, skipped)


def test_fixture_replay_example_answers_its_command(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(ROOT / "fixtures" / "demo" / "workspace", ws)
    intake = (ROOT / "fixtures" / "demo" / "commands.ndjson").read_bytes().splitlines()[0] + b"\n"
    proc = subprocess.run([sys.executable, "-m", "agent", "stdio", "--role", "orchestration", "--workspace", str(ws),
                           "--replay", str(ROOT / "fixtures" / "demo" / "responses.jsonl"), "--drain"],
                          input=intake, capture_output=True, timeout=120)
    events = [orjson.loads(x).get("event") for x in proc.stdout.splitlines()]
    assert "orchestration.needs_clarification" in events


def test_slow_marker_is_mentioned_only_if_it_selects_tests() -> None:
    decorator = "@pytest.mark." + "slow"  # spelled apart so this file does not count itself
    marked = [p for p in (ROOT / "tests").rglob("*.py") if decorator in p.read_text()]
    assert ("-m slow" in README) == bool(marked)


def test_readme_lorch_snippet_marks_the_model_id_as_a_placeholder() -> None:
    config = _lorch_config()
    models = {spec["env"]["LUALLM_AGENT_MODEL"] for spec in config["agents"].values()}
    assert models == {"<your-model-id>"}
    assert "Replace `<your-model-id>`" in README
