"""The pieces of agent/sandbox: grants, the launcher's exit status, refusal, the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from sandbox_support import CONFINED_MODES
from support import ROOT, events, make_command

from agent.errors import SandboxUnavailable
from agent.plans.commands import run_command, run_for_plan
from agent.sandbox import CommandBox, detect, landlock
from agent.sandbox.grants import (
    command_read_dirs,
    expand_excluding,
    is_within,
    secret_paths,
    worker_read_dirs,
)
from agent.sandbox.policy import LANDLOCK_NS, NONE, Policy


def test_expand_excluding_carves_secrets_and_keeps_siblings(tmp_path):
    for d in ("etc/ssh", "etc/ssl/private", "etc/ssl/certs", "home/me/.ssh", "home/me/.venv/bin", "usr/bin"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "etc" / "passwd").write_text("x")
    t = str(tmp_path)
    got = expand_excluding([t, f"{t}/home/me/.venv"], [f"{t}/etc/ssh", f"{t}/etc/ssl/private", f"{t}/home/me/.ssh"],
                           [f"{t}/home/me"])
    assert got == sorted([f"{t}/etc/passwd", f"{t}/etc/ssl/certs", f"{t}/home/me/.venv", f"{t}/usr"])


def test_a_grant_inside_a_secret_is_dropped(tmp_path):
    (tmp_path / ".ssh" / "keys").mkdir(parents=True)
    assert expand_excluding([str(tmp_path / ".ssh" / "keys")], [str(tmp_path / ".ssh")]) == []


def test_no_read_grant_reaches_home_or_a_secret():
    home = os.path.realpath(os.path.expanduser("~"))
    for grants in (command_read_dirs(), worker_read_dirs()):
        assert home not in grants
        for secret in secret_paths():
            assert not any(is_within(secret, g) for g in grants), (secret, grants)
    assert any(s.endswith("/.ssh") for s in secret_paths()) and "/etc/shadow" in secret_paths()


def test_policy_round_trips_through_its_command_line_text():
    p = Policy(LANDLOCK_NS, "/w", tmp="/t", home="/h", read=["/r"], execute=["/usr", "/a b=c"], landlock_abi=7)
    assert Policy.from_text(p.to_text()).to_dict() == p.to_dict()
    assert Policy.from_dict(p.to_dict()).to_dict() == p.to_dict()
    with pytest.raises(ValueError):
        Policy.from_text("mode=chroot\nworkspace=/w")
    with pytest.raises(ValueError):
        Policy(LANDLOCK_NS, "/w\nmode=none").to_text()


def test_landlock_abi_is_what_the_probe_found():
    assert landlock.abi_version() == detect.capabilities().landlock_abi


@pytest.mark.parametrize("mode", [*CONFINED_MODES, NONE])
def test_the_launcher_reports_the_commands_own_status(use_mode, tmp_path, mode):
    use_mode(mode, unsandboxed=mode == NONE)
    with CommandBox(str(tmp_path)) as box:
        statuses = []
        for argv in (["sh", "-c", "exit 3"], ["sh", "-c", "kill -TERM $$"], ["no-such-program-x"]):
            proc = box.popen(argv, env=dict(os.environ), stderr=subprocess.PIPE)
            _, err = proc.communicate(timeout=30)
            statuses.append(proc.returncode)
        # bubblewrap's own PID 1 reports a signal as 128+N and a failed exec as 1
        assert statuses == ([3, 143, 1] if mode == "bubblewrap" else [3, -15, 127])
        assert b"no-such-program-x" in err


def test_without_a_boundary_commands_are_refused(use_mode, tmp_path):
    use_mode(NONE)
    with pytest.raises(SandboxUnavailable) as info:
        run_command("echo hi", root=str(tmp_path), allow=["echo"], timeout_s=5, output_cap=1000)
    assert info.value.code == "sandbox_unavailable" and "--unsandboxed-commands" in info.value.message
    assert run_for_plan("echo hi", root=str(tmp_path), allow=["echo"], timeout_s=5)["code"] == "sandbox_unavailable"


def test_unsandboxed_commands_run_when_the_user_says_so(use_mode, tmp_path):
    use_mode(NONE, unsandboxed=True)
    res = run_command("echo hi", root=str(tmp_path), allow=["echo"], timeout_s=5, output_cap=1000)
    assert res["stdout"] == "hi\n"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", "sandbox", *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def test_sandbox_subcommand_reports_the_boundary_as_json():
    proc = _cli("--json")
    report = json.loads(proc.stdout)
    assert report["mode"] == detect.current().mode and report["summary"].startswith("sandbox: ")
    assert proc.returncode == (0 if report["commands_allowed"] else 1)


def test_sandbox_subcommand_exit_code_says_whether_commands_would_run():
    refused = _cli(env={"LUALLM_AGENT_SANDBOX": "none"})
    assert refused.returncode == 1 and "refused (sandbox_unavailable)" in refused.stdout
    allowed = _cli("--unsandboxed-commands", env={"LUALLM_AGENT_SANDBOX": "none"})
    assert allowed.returncode == 0 and "UNSANDBOXED" in allowed.stdout


REPLY = "ok.py\n```\nOK = True\n```\n"  # the builder's reply: one file as fenced text


def test_builder_refuses_the_test_command_without_a_boundary(spawn):
    agent = spawn("builder", "--test-command", "true", replies=[REPLY], env={"LUALLM_AGENT_SANDBOX": "none"})
    got = agent.run(make_command("implement"))
    assert events(got, "error")[0]["payload"]["code"] == "sandbox_unavailable"
    done = events(got, "builder.completed")[0]
    assert done["status"] == "failed" and done["payload"]["tests"]["status"] == "fail"


def test_unsandboxed_commands_flag_lets_the_test_command_run(spawn):
    agent = spawn("builder", "--test-command", "true", "--unsandboxed-commands", replies=[REPLY],
                  env={"LUALLM_AGENT_SANDBOX": "none"})
    done = events(agent.run(make_command("implement_changes")), "builder.completed")[0]
    assert done["payload"]["tests"]["status"] == "pass" and done["payload"]["files"] == ["ok.py"]


def test_unsandboxed_commands_from_the_environment(spawn):
    agent = spawn("builder", "--test-command", "true", replies=[REPLY],
                  env={"LUALLM_AGENT_SANDBOX": "none", "LUALLM_AGENT_UNSANDBOXED_COMMANDS": "1"})
    done = events(agent.run(make_command("implement_changes")), "builder.completed")[0]
    assert done["payload"]["tests"]["status"] == "pass" and done["payload"]["files"] == ["ok.py"]
