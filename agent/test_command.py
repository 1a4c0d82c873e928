"""Running a project's test command in the OS boundary and reading its real result.

A test never counts as `pass` without running: no command configured is `not_run`. The command
runs inside the OS sandbox (`agent.sandbox.CommandBox`: the workspace is the only writable place,
no network, private /tmp and $HOME); at the timeout, at shutdown, or when the agent dies,
everything it started is killed. Output goes to a temp file and only its tail is read.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import threading
import time
from typing import TYPE_CHECKING, Any

from agent.plans.commands import scrubbed_env
from agent.test_output import failure_digest

if TYPE_CHECKING:
    from agent.sandbox.spawn import CommandBox

__all__ = ["run_tests", "kill_running_tests", "OUTPUT_TAIL"]

OUTPUT_TAIL = 1500
FAILURES_CHARS = 2000  # the first failure of each kind, for a prompt (`agent.test_output`)
_running: set[CommandBox] = set()
_lock = threading.Lock()
_SHELL_CHARS = set("|&;<>()$`*?[]{}~\"'\\")
_PYTEST = re.compile(r"(\d+) (passed|failed|error|errors)\b")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests?", re.M)
_UNITTEST_FAILED = re.compile(r"FAILED \((.*?)\)")


def kill_running_tests() -> None:
    with _lock:
        boxes = list(_running)
    for box in boxes:
        box.kill(grace_s=0.5)


def _counts(output: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    tail = output[-4000:]
    found = {kind: int(n) for n, kind in _PYTEST.findall(tail)}
    if found:
        passed = found.get("passed", 0)
        failed = found.get("failed", 0) + found.get("error", 0) + found.get("errors", 0)
        return {"total": passed + failed, "passed": passed, "failed": failed}
    ran = _UNITTEST_RAN.search(tail)
    if ran:
        total = int(ran.group(1))
        failed = 0
        m = _UNITTEST_FAILED.search(tail)
        if m:
            failed = sum(int(x) for x in re.findall(r"=(\d+)", m.group(1)))
        counts = {"total": total, "passed": max(0, total - failed), "failed": failed}
    return counts


def _tail(fh: Any, n: int) -> bytes:
    """The last `n` bytes of a file: a test command may print gigabytes, memory stays bounded."""
    size = fh.seek(0, os.SEEK_END)
    fh.seek(max(0, size - n))
    return bytes(fh.read(n))


def run_tests(command: str | None, cwd: str, timeout_s: float) -> dict[str, Any]:
    """Run `command` in `cwd`; return the `tests` payload lorch reads."""
    if not command:
        return {"status": "not_run",
                "summary": "no test command configured (set --test-command or LUALLM_AGENT_TEST_COMMAND)"}
    from agent.sandbox.spawn import CommandBox, wait_for

    argv = ["/bin/sh", "-c", command] if any(c in _SHELL_CHARS for c in command) else shlex.split(command)
    started = time.monotonic()
    timed_out = False
    with tempfile.TemporaryFile() as out_f, CommandBox(cwd, what="the test command") as box:
        with _lock:
            _running.add(box)
        try:
            proc = box.popen(argv, env=scrubbed_env(), stdin=subprocess.DEVNULL, stdout=out_f,
                             stderr=subprocess.STDOUT)
            timed_out = not wait_for(proc, max(1.0, timeout_s))
            box.kill()
        finally:
            with _lock:
                _running.discard(box)
        out = _tail(out_f, 64 * 1024)
    # Paths relative to the workspace: the same failure reads the same wherever the workspace lives,
    # so prompts that quote it stay deterministic (recorded replies replay) and shorter.
    text = out.decode("utf-8", "replace").replace(cwd.rstrip("/") + "/", "")
    elapsed = round(time.monotonic() - started, 2)
    counts = _counts(text)
    if timed_out:
        status, summary = "fail", f"test command timed out after {timeout_s:.0f}s"
    elif proc.returncode == 0:
        status = "pass"
        summary = f"{counts['passed']} passed" if counts else "test command exited 0"
    else:
        status = "fail"
        summary = (f"{counts['failed']} of {counts['total']} failed (exit code {proc.returncode})" if counts
                   else f"test command exited {proc.returncode}")
    result: dict[str, Any] = {"status": status, "summary": summary, **counts, "command": command,
                              "exit_code": proc.returncode, "duration_s": elapsed,
                              "output_tail": text[-OUTPUT_TAIL:]}
    digest = failure_digest(text, FAILURES_CHARS) if status == "fail" else ""
    if digest:
        result["failures"] = digest
    return result
