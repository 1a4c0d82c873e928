"""The lorch bench task set: every task is well formed and its behavioural check really discriminates.

For each task under bench/lorch_tasks/: the check fails on the untouched workspace (a task whose
check already passes proves nothing), passes once the reference solution is in place, and the
workspace's own test command (what the builder runs) passes on both. The check lives outside the
workspace, so no agent can read or edit it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lorch_support import harness, load_bench

TASKS = harness.load_tasks()


def test_at_least_five_tasks_of_each_kind() -> None:
    kinds = [t.kind for t in TASKS]
    assert len(TASKS) >= 5
    assert {"new_module", "bug_fix", "feature"} <= set(kinds), kinds


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_task_is_well_formed(task: Any) -> None:
    assert task.id and task.goal and "{python}" in task.test_command_template
    assert (task.workspace / "SPEC.md").is_file() and (task.workspace / "PLAN.md").is_file()
    spec = (task.workspace / "SPEC.md").read_text()
    assert "## Status" in spec and "## Changelog" in spec  # the sections a spec maintainer may edit
    checks = sorted(task.check_dir.glob("check_*.py"))
    assert checks, "no behavioural check"
    names = {p.name for p in task.workspace.rglob("*")}
    assert not any(c.name in names for c in checks), "the check must stay outside the workspace"
    assert any(task.solution.rglob("*.py")), "no reference solution"


def _own_tests(task: Any, ws: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(shlex.split(task.test_command()), cwd=ws, capture_output=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_check_fails_untouched_and_passes_with_the_solution(task: Any, tmp_path: Path) -> None:
    ws = harness.prepare_workspace(task, tmp_path / "ws")
    before = harness.run_check(task, ws)
    assert not before.passed, f"the check already passes on the untouched workspace:\n{before.output}"
    assert _own_tests(task, ws).returncode == 0

    for src in task.solution.rglob("*"):
        if src.is_file():
            dest = ws / src.relative_to(task.solution)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
    after = harness.run_check(task, ws)
    assert after.passed, after.output
    own = _own_tests(task, ws)
    assert own.returncode == 0, own.stdout.decode()


def test_a_stubbed_class_fails_the_feature_check(tmp_path: Path) -> None:
    """The failure the issue saw: a whole class overwritten with the one new method. The check catches it."""
    task = next(t for t in TASKS if t.name == "feature-cart")
    ws = harness.prepare_workspace(task, tmp_path / "ws")
    (ws / "cart.py").write_text("class Cart:\n    def __init__(self):\n        self.items = {}\n\n"
                                "    def remove(self, name, quantity=1):\n"
                                "        if name not in self.items:\n            raise KeyError(name)\n"
                                "        self.items[name][1] -= quantity\n"
                                "        if self.items[name][1] <= 0:\n            del self.items[name]\n")
    result = harness.run_check(task, ws)
    assert not result.passed
    assert "add" in result.output


def test_plan_validity_after_repair_is_counted_per_command_from_the_audit() -> None:
    accepted = {"event": "log", "message": "command accepted"}
    audit = [accepted, {"event": "plan_end", "kind": "lua", "code": "plan_invalid"},
             {"event": "plan_end", "kind": "lua", "ok": True, "code": None},        # repaired: valid
             accepted, {"event": "plan_end", "kind": "lua", "code": "plan_runtime_error"},  # valid, failed later
             accepted,                                                                # a JSON answer: no plan
             accepted, {"event": "plan_end", "kind": "lua", "code": "plan_invalid"}]
    assert harness._plan_commands(audit) == (3, 2)


def test_a_lorch_that_floods_its_log_is_stopped_and_its_log_cut(tmp_path: Path, monkeypatch: Any) -> None:
    # lorch's shutdown race once wrote 18 GB of "read |0: file already closed" (run gram14) and the
    # bench died reading it. A fake lorch floods the same way; the harness stops it and keeps the
    # log's head and tail.
    fake = tmp_path / "lorch"
    fake.write_text("#!/bin/sh\necho 'starting'\nwhile :; do echo 'Error: read |0: file already closed'; done\n")
    fake.chmod(0o755)
    monkeypatch.setattr(harness, "LOG_FLOOD_BYTES", 200_000)
    monkeypatch.setattr(harness, "_LOG_KEEP", 20_000)
    log = tmp_path / "lorch.log"
    run = harness.run_lorch(fake, tmp_path, "T-1", wall_cap=60, log=log)
    assert not run.ok and not run.timed_out and run.seconds < 30
    assert run.error is not None and "lorch's log passed" in run.error
    text = log.read_text()
    assert text.startswith("starting\n") and "of lorch's log left out by the bench" in text
    assert log.stat().st_size < 60_000


def test_the_named_repairs_that_fired_are_counted_from_the_audit(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    audit = tmp_path / harness.AUDIT
    audit.parent.mkdir(parents=True)
    rows = [{"event": "repair_applied", "name": "keep_cut_reply"}, {"event": "model_call"},
            {"event": "repair_applied", "name": "stop_at_test_file"}, {"event": "repair_applied", "name": "keep_cut_reply"}]
    audit.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert harness.measure(tmp_path)["strategies"] == {"keep_cut_reply": 2, "stop_at_test_file": 1}


def _replay_module() -> Any:
    return load_bench("replay_first_round.py")


def test_first_replies_of_a_recording_are_read_again_and_judged(tmp_path: Path, capsys: Any) -> None:
    [task] = harness.load_tasks(["fix-temperature"])
    fixed = (task.solution / "temperature.py").read_text()
    unchanged = (task.workspace / "temperature.py").read_text()
    row = {"request": {"role": "builder", "messages": [{"role": "user", "content": "## Goal\n" + task.goal}]}}
    cases = [({"text": f"**temperature.py**\n```python\n{fixed}```\n"}, "pass"),  # the path in bold
             ({"text": f"temperature.py\n```python\n{fixed}", "finish_reason": "stop_string"}, "pass"),  # cut: closed
             ({"text": f"temperature.py\n```python\n{unchanged}```\n"}, "fail"),
             ({"text": "I would fix the formula."}, "fail")]
    for reply, verdict in cases:
        recording = tmp_path / "replies.jsonl"
        recording.write_text(json.dumps({**row, "reply": reply}) + "\n")
        assert _replay_module().main([str(recording), "--tasks", "fix-temperature"]) == 0
        out = capsys.readouterr().out
        assert out.split()[:2] == ["fix-temperature", verdict], out
    assert "with no file read: 1" in out
