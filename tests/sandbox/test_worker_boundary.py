"""The plan worker behind the OS boundary: a simulated lupa/Lua escape (arbitrary Python in the
worker, after the worker's own confinement step) reaches neither files outside the workspace, nor
secrets, nor the network, nor other processes; it cannot run a program."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

from agent.plans import PlanLimits, run_plan
from agent.plans.pool import POOL
from agent.sandbox import detect
from agent.workspace import Workspace

# Runs in a fresh interpreter exactly as the worker does: `_confine(request["sandbox"])` with the
# policy the agent sends (`worker_policy`), then tries everything an escaped plan would try.
ESCAPE = r'''
import json, os, socket, subprocess, sys
from agent.plans.worker import _confine
from agent.sandbox.plan_worker import worker_policy
ws, outside, key, port, agent_pid, confine = sys.argv[1:7]
if confine == "yes":
    policy = worker_policy(ws)
    assert policy is not None
    assert _confine(policy.to_dict()) is None
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "ok"
    except Exception as exc:
        out[name] = type(exc).__name__
attempt("write_outside", lambda: open(os.path.join(outside, "pwned"), "w").write("x"))
attempt("read_outside", lambda: open(os.path.join(outside, "secret.txt")).read())
attempt("read_ssh_key", lambda: open(key).read())
attempt("read_etc", lambda: open("/etc/hostname").read())
attempt("connect_tcp", lambda: socket.create_connection(("127.0.0.1", int(port)), timeout=2))
attempt("unix_socket", lambda: socket.socket(socket.AF_UNIX))
attempt("run_program", lambda: subprocess.run(["true"], check=True))
attempt("exec_python", lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
attempt("signal_agent", lambda: os.kill(int(agent_pid), 0))
attempt("read_agent_environ", lambda: open(f"/proc/{agent_pid}/environ", "rb").read())
attempt("write_inside", lambda: open(os.path.join(ws, "ok.txt"), "w").write("fine"))
attempt("read_inside", lambda: open(os.path.join(ws, "ok.txt")).read())
attempt("import_more_stdlib", lambda: __import__("xml.dom.minidom"))
print(json.dumps(out))
'''
BLOCKED = ["write_outside", "read_outside", "read_ssh_key", "read_etc", "connect_tcp", "unix_socket", "run_program",
           "exec_python", "signal_agent", "read_agent_environ"]
ALLOWED = ["write_inside", "read_inside", "import_more_stdlib"]


def _escape(scene, sleeper, confine: bool) -> dict[str, str]:
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        proc = subprocess.run(
            [sys.executable, "-c", ESCAPE, str(scene.ws), str(scene.outside), str(scene.key),
             str(srv.getsockname()[1]), str(sleeper.pid), "yes" if confine else "no"],
            capture_output=True, text=True, timeout=60, cwd=str(scene.ws),
            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_an_escaped_plan_reaches_nothing_outside_the_workspace(scene, sleeper):
    if detect.current().caps.landlock_abi < 1:
        pytest.skip("Landlock is not available on this kernel")
    got = _escape(scene, sleeper, confine=True)
    assert {k: got[k] for k in BLOCKED if got[k] == "ok"} == {}
    assert {k: got[k] for k in ALLOWED} == {k: "ok" for k in ALLOWED}
    assert not (scene.outside / "pwned").exists()


def test_the_same_escape_succeeds_without_the_boundary(scene, sleeper):
    # The control: every attempt above is a real way out when the worker is not confined.
    got = _escape(scene, sleeper, confine=False)
    assert {k: got[k] for k in BLOCKED} == {k: "ok" for k in BLOCKED}


class _InspectingHost:
    """Looks at the busy worker's /proc status while the plan waits for `call_llm`."""

    def __init__(self) -> None:
        self.status = ""

    def call_llm(self, prompt: str, opts: dict) -> str:
        (worker,) = list(POOL._busy)
        self.status = Path(f"/proc/{worker.pid}/status").read_text()
        return "ok"

    def progress(self, message: str) -> None:
        pass

    def log(self, message: str) -> None:
        pass


def test_a_real_plan_worker_runs_confined(tmp_path):
    if not detect.current().caps.seccomp:
        pytest.skip("seccomp is not available")
    host = _InspectingHost()
    out = run_plan('function run(context)\n  return tools.call_llm("x")\nend\n', {}, workspace=Workspace(tmp_path),
                   limits=PlanLimits(wall_s=20), host=host)
    assert out.result == b"ok" or out.result == "ok"
    assert "NoNewPrivs:\t1" in host.status and "Seccomp:\t2" in host.status, host.status
