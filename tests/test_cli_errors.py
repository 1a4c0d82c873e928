"""Every bad invocation and bad file is one line on stderr, exit code 2, nothing on stdout, no traceback.

Also: start-up warnings that name the flags, `--help` a person can use, and a command addressed
to another role refused with invalid_command.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, events, make_command

DEMO_COMMANDS = str(ROOT / "fixtures" / "demo" / "commands.ndjson")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LUALLM_AGENT_")) and k != "AGENT_TYPE"}
    env.update(extra)
    return env


def _agent(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=cwd,
                          env=env or _env(), stdin=subprocess.DEVNULL, timeout=60)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A directory of bad and good inputs the table refers to as {name}."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "userdir").mkdir()
    (tmp_path / "userdir" / "SPEC.md").write_text("my own spec\n")
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "a_file").write_text("x\n")
    (tmp_path / "not_json.ndjson").write_text('{"to": {"agent_type": "builder"}, "task_id": "T-1", "action": "implement"}\n'
                                              'this is not json\n')
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "empty_object.ndjson").write_text("{}\n")
    (tmp_path / "array.ndjson").write_text("[]\n")
    (tmp_path / "no_task.ndjson").write_text('{"to": {"agent_type": "builder"}, "action": "implement"}\n')
    (tmp_path / "blank.ndjson").write_text("\n\n")
    (tmp_path / "bad_responses.jsonl").write_text('{"digest": "x"}\n')
    (tmp_path / "garbage.jsonl").write_text("not json at all\n")
    (tmp_path / "array.json").write_text("[1, 2]\n")
    (tmp_path / "bad_config.json").write_text('{"providers": 3}\n')
    return tmp_path


# (argv with {placeholders} under the files fixture, extra environment, text the one line must contain)
BAD = [
    # replay: the command script is checked before anything starts
    (["replay", "{not_json.ndjson}", "--workspace", "{ws}"], {}, "not_json.ndjson:2: not valid JSON"),
    (["replay", "{empty_object.ndjson}", "--workspace", "{ws}"], {}, ":1: to.agent_type must be one of"),
    (["replay", "{array.ndjson}", "--workspace", "{ws}"], {}, ":1: a command must be a JSON object, got list"),
    (["replay", "{no_task.ndjson}", "--workspace", "{ws}"], {}, ":1: task_id must be a non-empty string"),
    (["replay", "{blank.ndjson}", "--workspace", "{ws}"], {}, "has no commands"),
    (["replay", "{a_dir}", "--workspace", "{ws}"], {}, "is a directory, not an NDJSON file of commands"),
    (["replay", "{missing.ndjson}", "--workspace", "{ws}"], {}, "cannot read"),
    (["replay", DEMO_COMMANDS, "--workspace", "{ws}", "--replay", "{a_dir}"], {}, "--replay file is not a regular file"),
    (["replay", DEMO_COMMANDS, "--workspace", "{ws}", "--replay", "{bad_responses.jsonl}"], {},
     "--replay file is not a recorded-responses JSONL file"),
    (["replay", DEMO_COMMANDS, "--workspace", "{a_file}"], {}, "workspace does not exist or is not a directory"),
    (["replay", DEMO_COMMANDS, "--workspace", "{ws}", "--max-tokens", "-5"], {}, "must be between 1 and"),
    (["replay", DEMO_COMMANDS, "--workspace", "{ws}", "--config", "{bad_config.json}"], {}, "invalid config"),
    # plan
    (["plan", "--graph", "{array.json}"], {}, "is not a plan run record"),
    (["plan", "--graph", "{a_dir}"], {}, "cannot read run record"),
    (["plan", "{a_file}", "--wall-s", "0"], {}, "argument --wall-s: must be > 0"),
    # demo never touches user files
    (["demo", "--workspace", "{a_file}"], {}, "is a file, not a directory"),
    (["demo", "--workspace", "{userdir}"], {}, "is not empty and not a workspace an earlier demo made"),
    # stdio: every setting checked at start
    (["stdio", "--workspace", "{ws}"], {}, "no role given: pass --role ROLE or set the environment variable AGENT_TYPE"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--replay", "{garbage.jsonl}"], {},
     "--replay file is not a recorded-responses JSONL file"),
    (["stdio", "--role", "builder", "--workspace", "{ws}"], {"LUALLM_AGENT_REPLAY": "{a_dir}"},
     "LUALLM_AGENT_REPLAY file is not a regular file"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--max-repairs", "-1"], {}, "must be between 0 and 10, got -1"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--max-tokens", "-5"], {}, "must be between 1 and"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--max-tokens", "lots"], {}, "expected an integer, got 'lots'"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--base-url", "notaurl"], {},
     "--base-url must be an http(s) URL"),
    (["stdio", "--role", "builder", "--workspace", "{ws}"], {"OPENAI_BASE_URL": "ftp://x"},
     "OPENAI_BASE_URL must be an http(s) URL"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--heartbeat-interval", "0"], {}, "must be > 0"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--heartbeat-interval", "inf"], {}, "expected a finite number"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--heartbeat-interval", "nan"], {}, "expected a finite number"),
    (["stdio", "--role", "builder", "--workspace", "{ws}"], {"LUALLM_AGENT_HEARTBEAT_INTERVAL": "0"},
     "LUALLM_AGENT_HEARTBEAT_INTERVAL must be > 0"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--model-timeout", "-1"], {}, "argument --model-timeout"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--plan-wall-s", "0"], {}, "argument --plan-wall-s"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--plan-memory-mb", "0"], {}, "argument --plan-memory-mb"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--max-line-bytes", "10"], {}, "argument --max-line-bytes"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--max-stdout-logs", "500"], {}, "argument --max-stdout-logs"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--prompt-budget", "0"], {}, "argument --prompt-budget"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--file-budget", "-3"], {}, "argument --file-budget"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--plan-run-allow", "python3;rm"], {},
     "--plan-run-allow takes command names"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--record", "{nope}/deeper/x.jsonl"], {},
     "--record: directory does not exist"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--record", "{a_dir}"], {}, "--record is not a regular file"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--replay", "{empty.jsonl}", "--record", "{empty.jsonl}"], {},
     "--record and --replay name the same file"),
    (["stdio", "--role", "builder", "--workspace", "{ws}", "--config", "{missing.json}"], {}, "--config file not found"),
    # the command line itself
    ([], {}, "the following arguments are required: COMMAND"),
    (["frobnicate"], {}, "invalid choice: 'frobnicate'"),
    (["stdio", "--no-such-flag"], {}, "unrecognized arguments: --no-such-flag"),
]


@pytest.mark.parametrize("argv, env, needle", BAD, ids=[" ".join(a[:1] + a[-2:]) + (f" {e}" if e else "") for a, e, _ in BAD])
def test_bad_invocation_is_one_line_exit_2(files: Path, argv: list[str], env: dict[str, str], needle: str) -> None:
    def fill(text: str) -> str:
        return re.sub(r"\{([^}]+)\}", lambda m: str(files / m.group(1)), text)

    proc = _agent([fill(a) for a in argv], cwd=files, env=_env(**{k: fill(v) for k, v in env.items()}))
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert needle in proc.stderr, proc.stderr
    assert not (files / "nope").exists(), "--record must never create directories"
    assert (files / "userdir" / "SPEC.md").read_text() == "my own spec\n"


def test_no_model_warning_names_the_flags(tmp_path: Path) -> None:
    proc = _agent(["stdio", "--role", "builder", "--workspace", str(tmp_path)], cwd=tmp_path)
    assert proc.returncode == 0
    warning = [line for line in proc.stderr.splitlines() if line.startswith("luallm-agent: warning:")]
    assert len(warning) == 1
    for flag in ("--model", "--base-url", "LUALLM_AGENT_MODEL", "OPENAI_BASE_URL", "--config", "--replay",
                 "model_not_configured"):
        assert flag in warning[0]


def test_base_url_without_model_warns(tmp_path: Path) -> None:
    proc = _agent(["stdio", "--role", "builder", "--workspace", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1"],
                  cwd=tmp_path)
    assert proc.returncode == 0
    assert "warning: --base-url http://127.0.0.1:9/v1 is set but no model id: set --model" in proc.stderr


def test_configured_model_gives_no_warning(tmp_path: Path) -> None:
    proc = _agent(["stdio", "--role", "builder", "--workspace", str(tmp_path)], cwd=tmp_path,
                  env=_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1", LUALLM_AGENT_MODEL="m"))
    assert proc.returncode == 0 and "warning" not in proc.stderr


@pytest.mark.parametrize("command", ["stdio", "replay", "demo", "schemas", "plan", "tools"])
def test_each_subcommand_help_has_a_description_an_example_and_defaults(tmp_path: Path, command: str) -> None:
    proc = _agent([command, "--help"], cwd=tmp_path)
    assert proc.returncode == 0
    text = proc.stdout
    usage, _, rest = text.partition("\n\n")
    description = rest.split("\n\n", 1)[0]
    assert len(description) > 120, description  # a paragraph, not a fragment
    assert "\nexamples:\n  luallm-agent " in text
    if command in ("stdio", "replay"):
        flat = " ".join(text.split())  # help lines wrap wherever the terminal width puts them
        assert "(default: 120.0)" in flat and "(default: auto)" in flat and "(default: 262144)" in flat
    assert "(default: None)" not in text and "(default: False)" not in text


def test_invalid_number_prints_one_line_not_the_usage(tmp_path: Path) -> None:
    proc = _agent(["stdio", "--heartbeat-interval", "0"], cwd=tmp_path)
    assert proc.returncode == 2 and "usage:" not in proc.stderr and proc.stderr.count("\n") == 1


def test_command_addressed_to_another_role_is_invalid(spawn) -> None:  # type: ignore[no-untyped-def]
    agent = spawn("reviewer")
    cmd = make_command("review", task_id="T-7", role="builder")
    err = events(agent.run(cmd), "error")[-1]
    assert err["payload"]["code"] == "invalid_command" and err["task_id"] == "T-7"
    assert "serves the reviewer role, not 'builder'" in err["payload"]["message"]
    # and the agent keeps serving
    assert events(agent.run(make_command("review", task_id="T-8")), "error")[-1]["payload"]["code"] != "invalid_command"


def test_broken_pipe_is_quiet(tmp_path: Path) -> None:
    proc = subprocess.run(f"{sys.executable} -m agent tools | head -c 10 > /dev/null", shell=True, cwd=tmp_path,
                          capture_output=True, text=True, env=_env(), timeout=60)
    assert "Traceback" not in proc.stderr
