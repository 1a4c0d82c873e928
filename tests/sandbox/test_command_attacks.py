"""Attacks on the command boundary: each runs through `run_command` (what `tools.run` uses) with
the argument filter widened as far as an attacker could wish (sh, python3, kill ... allowed), so
only the OS boundary stands in the way. Each attack is first shown to work without the boundary
(mode none, --unsandboxed-commands), so the test can fail."""

from __future__ import annotations

import base64
import os
import socket
import time
import uuid
from pathlib import Path

import pytest
from sandbox_support import CONFINED_MODES, KEY, SECRET, pids_with_marker

from agent.plans.commands import run_command
from agent.plans.limits import DEFAULT_RUN_ALLOW
from agent.sandbox.policy import BWRAP, LANDLOCK_NS, NONE

WIDE = (*DEFAULT_RUN_ALLOW, "sh", "python3", "kill", "sleep", "setsid")
MODES = [*CONFINED_MODES, NONE]


def run(cmd: str, root: Path, timeout_s: float = 20) -> dict:
    return run_command(cmd, root=str(root), allow=WIDE, timeout_s=timeout_s, output_cap=64 * 1024)


def py(code: str) -> str:
    """A python3 command line whose paths the argument filter cannot see (base64)."""
    blob = base64.b64encode(code.encode()).decode()
    return f"python3 -c \"import base64; exec(base64.b64decode('{blob}'))\""


@pytest.fixture(params=MODES)
def mode(request, use_mode):
    use_mode(request.param, unsandboxed=request.param == NONE)
    return request.param


def test_sort_compress_program_cannot_write_outside(mode, scene):
    marker = scene.outside / "pwned-by-sort"
    tmp_marker = Path("/tmp") / f"luallm-pwned-{uuid.uuid4().hex}"
    payload = f"touch {marker} {tmp_marker}\n" * 300  # enough for sort to spill through sh
    (scene.ws / "payload.txt").write_text(payload)
    run("sort -S 1K --compress-program=sh payload.txt", scene.ws)
    try:
        assert marker.exists() == (mode == NONE)
        assert tmp_marker.exists() == (mode == NONE)
    finally:
        tmp_marker.unlink(missing_ok=True)


def test_sort_output_through_a_link_cannot_write_outside(mode, scene):
    res = run("sort -o linkdir/x notes.txt", scene.ws)
    assert (scene.outside / "x").exists() == (mode == NONE)
    if mode != NONE:
        assert res["exit_code"] != 0


@pytest.mark.parametrize("cmd", ["cat linkdir/*", "grep -R TOP-SECRET .", "head linkdir/s*"])
def test_reading_through_a_link_or_glob_shows_nothing_outside(mode, scene, cmd):
    res = run(cmd, scene.ws)
    assert (SECRET in res["stdout"]) == (mode == NONE), res


def test_home_ssh_key_is_unreadable(mode, scene):
    res = run(py(f"print(open({str(scene.key)!r}).read())"), scene.ws)
    assert (KEY in res["stdout"]) == (mode == NONE), res


def test_secret_under_a_granted_dir_stays_unreadable(mode, scene, monkeypatch):
    # The operator grants the whole parent of $HOME: its siblings become readable, ~/.ssh never.
    monkeypatch.setenv("LUALLM_AGENT_SANDBOX_READ", str(scene.root))
    res = run(py(f"print(open({str(scene.outside / 'secret.txt')!r}).read()); "
                 f"print(open({str(scene.key)!r}).read())"), scene.ws)
    if mode != NONE:
        assert SECRET in res["stdout"], res        # the grant works ...
    assert (KEY in res["stdout"]) == (mode == NONE), res  # ... but not for the key


def test_cannot_connect_to_a_local_tcp_listener(mode, scene):
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        srv.settimeout(0.5)
        port = srv.getsockname()[1]
        res = run(py(f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3).sendall(b'hi'); "
                     "print('CONNECTED')"), scene.ws)
        try:
            conn, _ = srv.accept()
            conn.close()
            accepted = True
        except TimeoutError:
            accepted = False
    assert accepted == (mode == NONE) and ("CONNECTED" in res["stdout"]) == (mode == NONE), res


def test_tmp_writes_stay_private(mode, scene):
    name = f"/tmp/luallm-private-{uuid.uuid4().hex}"
    res = run(py(f"open({name!r}, 'w').write('x'); print('READ', open({name!r}).read())"), scene.ws)
    try:
        assert os.path.exists(name) == (mode == NONE)
        if mode == LANDLOCK_NS:
            assert "READ x" in res["stdout"], res  # the write landed in the command's own /tmp
    finally:
        if os.path.exists(name):
            os.unlink(name)


def test_cannot_write_outside_by_absolute_path(mode, scene):
    target = scene.outside / "written.txt"
    run(py(f"open({str(target)!r}, 'w').write('x')"), scene.ws)
    assert target.exists() == (mode == NONE)


def test_can_write_inside_the_workspace(mode, scene):
    res = run(py("open('made.txt', 'w').write('ok'); import os; os.mkdir('d'); os.rename('made.txt', 'd/m.txt')"),
              scene.ws)
    assert res["exit_code"] == 0, res
    assert (scene.ws / "d" / "m.txt").read_text() == "ok"


def test_cannot_signal_a_process_outside(mode, scene, sleeper):
    run(f"kill -9 {sleeper.pid}", scene.ws)
    time.sleep(0.1)
    assert (sleeper.poll() is None) == (mode != NONE)


def test_cannot_read_the_agents_environment(mode, scene, sleeper):
    # The agent's environment holds API keys; /proc/<agent>/environ must stay closed.
    res = run(py(f"print(open('/proc/{sleeper.pid}/environ', 'rb').read())"), scene.ws)
    assert ("sk-agent-secret-9931" in res["stdout"]) == (mode == NONE), res


def test_background_processes_die_with_the_command(mode, scene):
    marker = f"{int(uuid.uuid4().int % 10**6) + 7000000}"
    res = run(f"sh -c 'setsid sleep {marker} & sleep {marker} & echo started'", scene.ws)
    assert res["stdout"] == "started\n"
    deadline = time.monotonic() + 2
    while pids_with_marker(f"sleep\0{marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_marker(f"sleep\0{marker}") == []


def test_timeout_kills_the_whole_tree(mode, scene):
    marker = f"{int(uuid.uuid4().int % 10**6) + 8000000}"
    t = time.monotonic()
    res = run(f"sh -c 'setsid sleep {marker} & sleep {marker}'", scene.ws, timeout_s=0.5)
    assert res["timed_out"] and res["exit_code"] == -9 and time.monotonic() - t < 3
    deadline = time.monotonic() + 2
    while pids_with_marker(f"sleep\0{marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_marker(f"sleep\0{marker}") == []


@pytest.mark.parametrize("ns_mode", [LANDLOCK_NS, "bubblewrap"])
def test_a_command_may_serve_and_connect_on_its_own_loopback(use_mode, scene, ns_mode):
    use_mode(ns_mode)
    res = run(py("import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1); "
                 "c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.sendall(b'ping'); "
                 "print(a.recv(4).decode())"), scene.ws)
    assert res["stdout"] == "ping\n", res


def test_home_is_private_and_writable(mode, scene):
    res = run(py("import os; h = os.path.expanduser('~'); open(os.path.join(h, '.cache-x'), 'w').write('1'); "
                 "print(sorted(os.listdir(h)))"), scene.ws)
    if mode == NONE:
        assert ".ssh" in res["stdout"]
    else:
        assert res["stdout"] == "['.cache-x']\n", res
        assert not (scene.home / ".cache-x").exists()


def test_a_workspace_inside_home_stays_usable_and_the_key_unreadable(mode, scene):
    ws = scene.home / "proj"
    ws.mkdir()
    res = run(py(f"open('out.txt', 'w').write('made'); print(open({str(scene.key)!r}).read())"), ws)
    assert (ws / "out.txt").read_text() == "made"
    assert (KEY in res["stdout"]) == (mode == NONE), res


def test_the_agents_records_are_read_only_where_mounts_are_possible(mode, scene):
    # A forged receipt or audit line would be replayed or believed later: with namespaces the
    # record directories are mounted read-only in the command's view; without them only the
    # receipt's MAC stands in the way (tests/test_receipts.py), and the write goes through.
    for rel in ("receipts/T-1", "logs/luallm-agent"):
        (scene.ws / rel).mkdir(parents=True)
    (scene.ws / "receipts/T-1/review-1.json").write_text("{}\n")
    (scene.ws / "notes2.txt").write_text("forged\n")
    mounts = mode in (LANDLOCK_NS, BWRAP)
    # (paths the argument filter cannot see: it refuses `sort -o receipts/...` outright)
    for code in ("open('receipts/T-1/review-1.json', 'w').write('forged')", "open('receipts/new.json', 'w').write('{}')",
                 "open('logs/luallm-agent/audit.jsonl', 'a').write('{}')", "import os; os.remove('receipts/T-1/review-1.json')"):
        res = run(py(code), scene.ws)
        assert (res["exit_code"] != 0) == mounts, (code, res)
    receipt = scene.ws / "receipts/T-1/review-1.json"
    assert (receipt.exists() and receipt.read_text() == "{}\n") == mounts
    assert (not (scene.ws / "receipts/new.json").exists()) == mounts
    assert run("sort -o notes3.txt notes2.txt", scene.ws)["exit_code"] == 0  # the rest stays writable


def test_the_receipt_key_is_out_of_a_commands_reach(mode, scene):
    from agent.receipt_key import load_key

    key = load_key(scene.ws)
    assert key.where is not None and key.where.startswith(str(scene.home))
    res = run(py(f"print(open({key.where!r}, 'rb').read().hex())"), scene.ws)
    assert (len(res["stdout"].strip()) == 64) == (mode == NONE), res
