"""Run the real lorch orchestrator (`lorch run --task`) with this agent in all four roles, on one task.

Used by `bench/bench_lorch.py` (the table over tasks x models) and by the `reallorch` tests.

A task is a folder under `bench/lorch_tasks/<name>/`:

* `task.json`  `{id, kind, title, goal, test_command}`; `{python}` in the test command is this interpreter;
* `workspace/` the starting project (code, `tests/`, `SPEC.md`, `PLAN.md`) lorch and the agents work in;
* `check/`     the behavioural test (`check_*.py`, unittest), kept **outside** the workspace so no agent
               can see or edit it; run against the final workspace, it fails on the untouched one;
* `solution/`  reference files (overlaid on the workspace they make the check pass; the scripted
               model answers with them).

A task made by `../shared/tools/exercism_tasks.py` has `seed/` instead of `workspace/`, its test line
in `test` and no `check/`: it is solved when that test line passes on the final workspace and every
file in `pristine_tests` is byte for byte the seed's (changing the tests is no solution).

What lorch does in `--task` mode (read from its source, cmd/lorch + internal/cli/run.go +
internal/scheduler): it loads `lorch.json` (`--config`, else searched upward from the current
directory), creates its bookkeeping folders in the workspace, snapshots it, starts builder,
reviewer and spec_maintainer (no orchestration agent, no intake: `inputs` is just `{"goal": …}` from
the config's `tasks[]`), then implement → review (⟲ implement_changes while `changes_requested`, no
limit) → update_spec (⟲ while `spec.changes_requested`). Every command's deadline is 10 minutes,
the whole run 30 minutes (`timeouts_s` is only read for intake). On success it logs
`msg="task execution complete"` and exits 0; on failure it prints `Error: …` to stderr and exits 1.
lorch prints no `LORCH RESULT:` line: `lorch_ok` here means exit code 0 and that log line.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TASKS_DIR = Path(__file__).resolve().parent / "lorch_tasks"
DEFAULT_LORCH = Path("/work/lorch-bin/lorch")
ROLES = ("builder", "reviewer", "spec_maintainer", "orchestration")
AUDIT = Path("logs") / "luallm-agent" / "audit.jsonl"
PLANS = Path("logs") / "luallm-agent" / "plans"
SUCCESS_LINE = "task execution complete"
# Codes an agent may end a command with when the model cannot produce a valid answer.
ANSWER_FAILURES = {"invalid_model_response", "plan_invalid", "plan_runtime_error", "plan_instruction_limit",
                   "plan_timeout", "plan_memory_exceeded", "plan_quota_exceeded", "forbidden_spec_edit",
                   "plan_file_missing", "path_rejected", "sandbox_violation"}

__all__ = ["Task", "load_tasks", "task_from", "exercism_tasks", "run_test_line", "run_alone", "server_module", "find_lorch", "lorch_unavailable_reason", "prepare_workspace", "lorch_config",
           "run_check", "run_lorch", "measure", "run_task", "scripted_replies", "TASKS_DIR", "ROOT"]


@dataclass(frozen=True)
class Task:
    name: str
    dir: Path
    id: str
    kind: str
    title: str
    goal: str
    test_command_template: str
    pristine_tests: tuple[str, ...] = ()

    @property
    def workspace(self) -> Path:
        return self.dir / "workspace" if (self.dir / "workspace").is_dir() else self.dir / "seed"

    @property
    def check_dir(self) -> Path:
        return self.dir / "check"

    @property
    def solution(self) -> Path:
        return self.dir / "solution"

    def test_command(self, python: str = sys.executable) -> str:
        return self.test_command_template.replace("{python}", shlex.quote(python))


def load_tasks(names: list[str] | None = None, root: Path = TASKS_DIR) -> list[Task]:
    """The tasks under `root` (all, sorted by name, or the named ones in the given order)."""
    chosen = names or sorted(p.name for p in root.iterdir() if (p / "task.json").is_file())
    tasks = []
    for name in chosen:
        folder = root / name
        if not (folder / "task.json").is_file():
            raise SystemExit(f"no task {name!r} under {root} (known: {', '.join(sorted(p.name for p in root.iterdir()))})")
        tasks.append(task_from(folder, name))
    return tasks


def task_from(folder: Path, name: str | None = None) -> Task:
    """One task folder of either layout (this bench's, or exercism_tasks.py's)."""
    meta = json.loads((folder / "task.json").read_text())
    test = meta.get("test_command") or meta["test"]
    return Task(name or folder.name, folder, meta.get("id", "T-001"), meta["kind"], meta.get("title", meta["kind"]),
                meta["goal"], test, tuple(meta.get("pristine_tests") or ()))


def exercism_tasks(root: Path, count: int) -> list[Task]:
    """`count` exercises of `root` spread evenly over its sorted names (all when count <= 0), so a
    sample is fixed by the folder alone and never picked by hand."""
    names = sorted(p.name for p in root.iterdir() if (p / "task.json").is_file())
    if 0 < count < len(names):
        names = [names[i * len(names) // count] for i in range(count)]
    return [task_from(root / n, "ex-" + n) for n in names]


def server_module() -> Any:
    """tests/realmodel/server.py (serves catalogue models with llama.cpp), loaded by path once."""
    import importlib.util

    name = "luallm_realmodel_server"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "realmodel" / "server.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def find_lorch() -> Path | None:
    """$LUALLM_LORCH_BIN, else /work/lorch-bin/lorch, else `lorch` on PATH."""
    env = os.environ.get("LUALLM_LORCH_BIN")
    if env:
        return Path(env)
    if DEFAULT_LORCH.is_file():
        return DEFAULT_LORCH
    found = shutil.which("lorch")
    return Path(found) if found else None


def lorch_unavailable_reason() -> str | None:
    path = find_lorch()
    if path is None:
        return ("the real lorch binary was not found (set LUALLM_LORCH_BIN, or build it from GitHub iambrandonn/lorch "
                "with ../shared/tools/build_lorch.sh into /work/lorch-bin/lorch, or put `lorch` on PATH)")
    if not (path.is_file() and os.access(path, os.X_OK)):
        return f"LUALLM_LORCH_BIN={path} is not an executable file"
    return None


def prepare_workspace(task: Task, dest: Path) -> Path:
    """A fresh copy of the task's starting workspace at `dest` (which must not exist)."""
    shutil.copytree(task.workspace, dest)
    return dest


def lorch_config(task: Task, *, base_url: str | None, model: str | None, agent_args: list[str] | None = None,
                 scripted: dict[str, Path] | None = None, python: str = sys.executable) -> dict[str, Any]:
    """lorch.json: all four roles run this agent from the workspace, as a user would configure it.

    Only the endpoint, the model name and the test command are set (plus PYTHONPATH so this
    checkout's `agent` package is the one that runs); `agent_args` adds flags, e.g. `--answers json`.
    `scripted` gives each role a `--scripted-replies` file instead of a model server."""
    env = {"PYTHONPATH": str(ROOT), "LUALLM_AGENT_TEST_COMMAND": task.test_command(python)}
    if base_url:
        env["OPENAI_BASE_URL"] = base_url
    if model:
        env["LUALLM_AGENT_MODEL"] = model
    timeouts = {"builder": {"implement": 600, "implement_changes": 600}, "reviewer": {"review": 600},
                "spec_maintainer": {"update_spec": 600}, "orchestration": {"intake": 600, "task_discovery": 600}}
    agents: dict[str, Any] = {}
    for role in ROLES:
        cmd = [python, "-m", "agent", "stdio", "--workspace", ".", *(agent_args or [])]
        if scripted and role in scripted:
            cmd += ["--scripted-replies", str(scripted[role])]
        agents[role] = {"cmd": cmd, "heartbeat_interval_s": 10, "timeouts_s": timeouts[role], "env": dict(env)}
    agents["orchestration"]["enabled"] = True
    return {"version": "1.0", "workspace_root": ".",
            "policy": {"concurrency": 1, "message_max_bytes": 262144, "strict_version_pinning": True,
                       "retry": {"max_attempts": 3}},
            "agents": agents, "tasks": [{"id": task.id, "goal": task.goal}]}


@dataclass
class CheckResult:
    passed: bool
    summary: str
    output: str


def _checked(argv: list[str], ws: Path, timeout: float, pythonpath: Path | None = None) -> CheckResult:
    """`argv` run in `ws` without this bench's PYTHONPATH (and without writing bytecode anywhere)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave no __pycache__ in the workspace or the task folder
    try:
        proc = subprocess.run(argv, cwd=ws, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return CheckResult(False, f"timed out after {timeout:.0f}s", "")
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    last = [line for line in out.strip().splitlines() if line.strip()]
    return CheckResult(proc.returncode == 0, last[-1] if last else f"exit {proc.returncode}", out[-4000:])


def run_check(task: Task, ws: Path, timeout: float = 120.0) -> CheckResult:
    """The behavioural test against `ws`: unittest over `check/check_*.py`, workspace on the import path;
    for a task without `check/`, its own test line with its pristine tests unchanged."""
    if not task.check_dir.is_dir():
        return run_test_line(task, ws, timeout)
    return _checked([sys.executable, "-m", "unittest", "discover", "-s", str(task.check_dir), "-t",
                     str(task.check_dir), "-p", "check_*.py"], ws, timeout, pythonpath=ws)


def run_test_line(task: Task, ws: Path, timeout: float = 120.0) -> CheckResult:
    """The task's test line in `ws`, failed outright when a pristine test file was changed."""
    changed = [rel for rel in task.pristine_tests
               if not (ws / rel).is_file() or (ws / rel).read_bytes() != (task.workspace / rel).read_bytes()]
    if changed:
        return CheckResult(False, f"test file changed: {', '.join(changed)}", "")
    return _checked(["/bin/sh", "-c", task.test_command()], ws, timeout)


@dataclass
class LorchRun:
    exit_code: int | None
    ok: bool  # exit 0 and lorch's "task execution complete"
    seconds: float
    decode_errors: int  # agent stdout lines lorch could not decode (it drops them silently)
    timed_out: bool
    error: str | None  # lorch's `Error: …` line, or why it was stopped
    log: Path


LOG_FLOOD_BYTES = 256 * 2**20
_LOG_KEEP = 4 * 2**20


def _log_text(log: Path) -> str:
    """lorch's log as text; past 2 × _LOG_KEEP only its head and tail, and the file cut down to them."""
    size = log.stat().st_size
    if size <= 2 * _LOG_KEEP:
        return log.read_text("utf-8", "replace")
    with open(log, "rb") as f:
        head = f.read(_LOG_KEEP)
        f.seek(size - _LOG_KEEP)
        tail = f.read()
    gap = f"\n[… {size - 2 * _LOG_KEEP} bytes of lorch's log left out by the bench …]\n".encode()
    log.write_bytes(head + gap + tail)
    return (head + gap + tail).decode("utf-8", "replace")


def run_lorch(lorch: Path, ws: Path, task_id: str, *, wall_cap: float, log: Path) -> LorchRun:
    """`lorch run --task ID --config ws/lorch.json` from the workspace, killed (whole group) at `wall_cap`."""
    argv = [str(lorch), "run", "--task", task_id, "--config", str(ws / "lorch.json")]
    started = time.monotonic()
    timed_out = False
    flooded = False
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=ws, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            while proc.poll() is None:
                if time.monotonic() - started > wall_cap:
                    timed_out = True
                    _stop_group(proc)
                elif log.stat().st_size > LOG_FLOOD_BYTES:
                    # lorch's shutdown race ("read |0: file already closed" in a loop) once wrote
                    # 18 GB here in eight minutes, after an agent had exited 3 (run gram14).
                    flooded = True
                    _stop_group(proc)
                else:
                    time.sleep(0.5)
        except BaseException:
            _stop_group(proc)
            raise
    seconds = time.monotonic() - started
    text = _log_text(log)
    errors = [line[len("Error: "):] for line in text.splitlines() if line.startswith("Error: ")]
    error = errors[-1] if errors else None
    if timed_out:
        error = f"stopped by the bench's wall cap ({wall_cap:.0f}s)"
    elif flooded:
        error = f"stopped: lorch's log passed {LOG_FLOOD_BYTES // 2**20} MiB (its shutdown race)"
    ok = proc.returncode == 0 and SUCCESS_LINE in text and not timed_out
    # "read |0: file already closed" is lorch reading a pipe it closed itself while shutting down
    # (a race inside lorch that repeats the line in a loop), not a line the agent wrote.
    decode_errors = sum(1 for line in text.splitlines()
                        if ("failed to decode message from agent" in line or "unexpected message type from agent" in line)
                        and "file already closed" not in line)
    return LorchRun(proc.returncode, ok, round(seconds, 1), decode_errors, timed_out, error, log)


def wait_server_idle(base_url: str, timeout: float = 300.0) -> bool:
    """After a run was cut off, wait until llama.cpp's server has no request in progress (`/slots`),
    so the next task does not queue behind an abandoned generation. True when idle (or unknown)."""
    import urllib.request

    root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"{root}/slots", timeout=10) as resp:  # noqa: S310 (loopback)
                slots = json.loads(resp.read())
        except (OSError, ValueError):
            return True  # no /slots endpoint (another server): nothing to wait for
        if not any(isinstance(s, dict) and s.get("is_processing") for s in slots):
            return True
        time.sleep(2.0)
    return False


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """lorch and the agents it started share its process group (its own session)."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _jsonl(paths: list[Path]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in paths:
        if not path.is_file():
            continue
        for line in path.read_bytes().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def audit_events(ws: Path) -> list[dict[str, Any]]:
    """The agents' audit records of one task's workspace, oldest first (rotated files `.N` before the
    live one); a line cut when an agent was stopped is skipped."""
    return _jsonl(sorted((ws / AUDIT.parent).glob(AUDIT.name + "*"), reverse=True))


def _by_action(audit: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Answer validity per lorch action. lorch sends one command at a time, so every audit record
    belongs to the command most recently accepted (its `command accepted` log names the action)."""
    out: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for a in audit:
        if a.get("event") == "log" and a.get("message") == "command accepted":
            current = out.setdefault(str(a.get("action")), {"commands": 0, "answers": 0, "first_try": 0, "valid": 0,
                                                            "model_calls": 0, "rejections": [], "failures": []})
            current["commands"] += 1
        elif current is None:
            continue
        elif a.get("event") == "model_call":
            current["model_calls"] += 1
        elif a.get("event") == "log" and a.get("message") == "answer validated":
            current["answers"] += 1
            current["valid"] += 1
            current["first_try"] += int(a.get("attempts") == 1)
        elif a.get("event") == "answer_rejected":
            current["rejections"].append(str(a.get("code")))
        elif a.get("event") == "command_failed":
            current["failures"].append(str(a.get("code")))
            current["answers"] += int(a.get("code") in ANSWER_FAILURES)
    return out


def _plan_commands(audit: list[dict[str, Any]]) -> tuple[int, int]:
    """(commands that ran a Lua plan, those whose last plan was valid: it compiled and passed the
    lint, so it ran), one command at a time as in `_by_action`: validity after repair, per command."""
    last: list[str] = []
    for a in audit:
        if a.get("event") == "log" and a.get("message") == "command accepted":
            last.append("")
        elif last and a.get("event") == "plan_end" and a.get("kind") == "lua":
            last[-1] = str(a.get("code") or "ok")
    ran = [code for code in last if code]
    return len(ran), sum(1 for code in ran if code != "plan_invalid")


def measure(ws: Path) -> dict[str, Any]:
    """What happened, from lorch's event log (`events/*.ndjson`) and the agents' audit log."""
    lorch_log = _jsonl(sorted((ws / "events").glob("*.ndjson")))
    commands = [m for m in lorch_log if m.get("kind") == "command"]
    events = [m for m in lorch_log if m.get("kind") == "event"]
    by_action: dict[str, int] = {}
    for c in commands:
        by_action[str(c.get("action"))] = by_action.get(str(c.get("action")), 0) + 1
    audit = audit_events(ws)
    calls = [a for a in audit if a.get("event") == "model_call"]
    validated = [a for a in audit if a.get("event") == "log" and a.get("message") == "answer validated"]
    rejected = [a for a in audit if a.get("event") == "answer_rejected"]
    failed = [a for a in audit if a.get("event") == "command_failed"]
    answer_failed = [a for a in failed if a.get("code") in ANSWER_FAILURES]
    plan_starts = [a for a in audit if a.get("event") == "plan_start" and a.get("kind") == "lua"]
    plan_ends = [a for a in audit if a.get("event") == "plan_end" and a.get("kind") == "lua"]
    plan_commands = _plan_commands(audit)
    vias: dict[str, int] = {}
    for v in validated:
        vias[str(v.get("via"))] = vias.get(str(v.get("via")), 0) + 1
    terminal = [e for e in events if e.get("event") not in ("builder.progress", "artifact.produced", "log")]
    built = [e.get("payload") or {} for e in events if e.get("event") == "builder.completed"]
    builder_tests = [(b.get("tests") or {}).get("status") for b in built]
    return {
        "commands": len(commands), "commands_by_action": by_action,
        "review_rounds": by_action.get("review", 0), "spec_rounds": by_action.get("update_spec", 0),
        "events": [f"{e.get('event')}{'/' + str(e.get('status')) if e.get('status') else ''}" for e in terminal],
        "error_codes": [str((e.get("payload") or {}).get("code")) for e in events if e.get("event") == "error"],
        "builder_tests": builder_tests,
        # the tests passed after the first implement's first answer: the agent's pass@1
        "first_answer_passed": bool(built) and builder_tests[0] == "pass"
        and int(built[0].get("rounds") or 1 + int(built[0].get("test_repairs") or 0)) == 1,
        # replies the agent could not use at all (no valid answer, no usable file)
        "malformed": sum(1 for a in audit if a.get("event") in ("answer_rejected", "reply_unusable")),
        "model_calls": len(calls), "model_errors": [c.get("error") for c in calls if c.get("outcome") == "error"],
        "tokens_in_max": max((int(c.get("tokens_in") or 0) for c in calls), default=0),
        "tokens_in_total": sum(int(c.get("tokens_in") or 0) for c in calls),
        "tokens_out_total": sum(int(c.get("tokens_out") or 0) for c in calls),
        "model_seconds": round(sum(float(c.get("latency_ms") or 0) for c in calls) / 1000.0, 1),
        # answer validity: one "request" per answer the agent needed (validated, or failed for want of one)
        "answers": len(validated) + len(answer_failed),
        "answers_valid_first_try": sum(1 for v in validated if v.get("attempts") == 1),
        "answers_valid": len(validated), "answers_via": vias,
        "rejections": [str(r.get("code")) for r in rejected],
        "rejection_errors": [str(r.get("error", ""))[:240] for r in rejected][:12],
        "lua_plans": len(plan_starts), "lua_plans_ok": sum(1 for p in plan_ends if p.get("ok")),
        # valid: compiled and passed the lint (ran, whatever the run's outcome); plan_invalid is neither
        "lua_plans_valid": sum(1 for p in plan_ends if p.get("code") != "plan_invalid"),
        # answers whose stream the client stopped at a loop
        "loops_stopped": sum(1 for a in audit if a.get("event") == "model_repetition_stopped"),
        "plan_commands": plan_commands[0], "plan_commands_valid": plan_commands[1],
        "plan_records": len(list((ws / PLANS).glob("*.json"))) if (ws / PLANS).is_dir() else 0,
        "command_failures": [str(a.get("code")) for a in failed],
        "by_action": _by_action(audit),
        # the named repairs and fallbacks that changed a command's course (agent/answering/strategies.py)
        "strategies": dict(Counter(str(a.get("name")) for a in audit if a.get("event") == "repair_applied")),
    }



def scripted_replies(task: Task) -> dict[str, list[str]]:
    """Canned model replies that complete the task correctly: the builder answers with the solution
    files as text, the reviewer approves, the spec maintainer records the change in Status and Changelog."""
    files = "".join(f"{p.relative_to(task.solution)}\n```\n{p.read_text()}```\n\n"
                    for p in sorted(task.solution.rglob("*")) if p.is_file())
    reviewer = {"status": "approved", "summary": "the change does what the goal asks", "findings": []}
    spec = {"status": "updated", "summary": f"recorded {task.id}",
            "section_edits": [{"section": "Status", "content": f"{task.title}: done ({task.id})."},
                              {"section": "Changelog", "content": f"- 0.1: first version.\n- 0.2: {task.title} ({task.id})."}]}
    return {"builder": [f"{task.title}: done.\n\n{files}"], "reviewer": [json.dumps(reviewer)],
            "spec_maintainer": [json.dumps(spec)], "orchestration": []}


@dataclass
class RunSpec:
    """One model to run a task with: a served model (`base_url` + `model`) or scripted replies."""

    label: str
    base_url: str | None = None
    model: str | None = None
    scripted: bool = False
    agent_args: list[str] = field(default_factory=list)
    replies: dict[str, list[str]] | None = None  # scripted replies per role (default: `scripted_replies`)


def run_task(task: Task, spec: RunSpec, out: Path, *, lorch: Path, wall_cap: float) -> dict[str, Any]:
    """Run one task end to end under real lorch in a fresh workspace at `out/ws`; return the measurements.

    `success` = lorch succeeded (exit 0 and its completion line) AND the behavioural check passes."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    ws = prepare_workspace(task, out / "ws")
    scripted: dict[str, Path] | None = None
    if spec.scripted:
        scripted = {}
        for role, replies in (spec.replies or scripted_replies(task)).items():
            scripted[role] = out / f"scripted-{role}.json"
            scripted[role].write_text(json.dumps(replies))
    config = lorch_config(task, base_url=spec.base_url, model=spec.model, agent_args=spec.agent_args,
                          scripted=scripted)
    (ws / "lorch.json").write_text(json.dumps(config, indent=2) + "\n")
    started_check = run_check(task, ws)  # the check must fail before the run, or the task proves nothing
    run = run_lorch(lorch, ws, task.id, wall_cap=wall_cap, log=out / "lorch.log")
    if run.timed_out and spec.base_url:
        wait_server_idle(spec.base_url)
    check = run_check(task, ws)
    result: dict[str, Any] = {
        "task": task.name, "kind": task.kind, "task_id": task.id, "model": spec.label,
        "agent_args": spec.agent_args, "success": run.ok and check.passed,
        "lorch_ok": run.ok, "lorch_exit": run.exit_code, "lorch_error": run.error, "timed_out": run.timed_out,
        "lorch_decode_errors": run.decode_errors,
        "check_passed": check.passed, "check_summary": check.summary, "check_failed_before": not started_check.passed,
        "seconds": run.seconds, **measure(ws), "workspace": str(ws), "lorch_log": str(run.log),
    }
    (out / "check.log").write_text(check.output)
    (out / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def run_alone(task: Task, base_url: str, model: str, label: str, out: Path) -> dict[str, Any]:
    """The model alone (`model_alone.py`) on a fresh copy of the task's workspace, judged by the same check."""
    import model_alone

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    ws = prepare_workspace(task, out / "ws")
    got = model_alone.solve(task.goal, task.test_command(), ws, base_url, model)
    check = run_check(task, ws)
    result = {"task": task.name, "kind": task.kind, "model": label, "success": got["passed"] and check.passed,
              "check_passed": check.passed, "check_summary": check.summary, **got, "workspace": str(ws)}
    (out / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return result
