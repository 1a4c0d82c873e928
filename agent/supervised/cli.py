"""`luallm-agent init | doctor | run | stop | log | approvals`: supervised standalone mode for a person.

Exit codes of `run`: 0 complete, 1 failed (`termination_reason` says when it was the step budget
or the timeout), 2 cannot start (bad settings, corrupted state, a task already in progress),
3 paused (an approval or a model is needed; the lines printed say how to resume), 4 stopped by
an external stop. `doctor`: 0 all pass, 1 fatal, 2 warnings only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

__all__ = ["add_parsers", "main", "COMMANDS"]

COMMANDS = ("init", "doctor", "run", "stop", "log", "approvals")
EXIT_USAGE = 2
_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
RUN_EPILOG = """\
which model answers (config.json in the home; check it with `luallm-agent doctor`):
  luallm models (the default): "model_selection" names them per task type (planning,
  simple_transform, skill_generation, or "default"), prefer first, then fallback:
    "model_selection": {"default": {"prefer": ["MODEL"], "fallback": ["OTHER"]}}
  `luallm-agent init --model MODEL` writes that on a new home; empty means the first running
  luallm model. A stopped model pauses the task with its `luallm start MODEL` command, or is
  started for you with "luallm": {"auto_start": true} ("auto_stop": true stops it after the task).
  An OpenAI-compatible server instead of luallm: "providers" (and "routing") in config.json, the
  shape `luallm-agent stdio --config` reads, with "model_selection" left out.

files outside the home: the files the task writes (each approved first), and one run record per
plan or skill node under WORKSPACE/logs/luallm-agent/plans/.

examples:
  luallm-agent run "summarise data.csv into summary.md" --workspace ~/data
  luallm-agent run --resume          (also spelled: luallm-agent --resume)
  luallm-agent run --reset           (also spelled: luallm-agent --reset)"""


def _out(text: str) -> None:
    sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(f"luallm-agent: {text}\n")
    sys.stderr.flush()


def add_parsers(sub: Any) -> None:
    """Register the supervised-mode commands on the top-level subparsers."""
    def home_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument("--home", help="agent home (env LUALLM_AGENT_HOME; default ~/.config/luallmagent)")

    p = sub.add_parser("init", help="create the agent home and a default config.json (never overwrites)")
    home_opt(p)
    p.add_argument("--model", action="append", default=[],
                   help="luallm model to prefer for every task type (repeatable; default: the first running one)")
    p.set_defaults(func=main, supervised="init")

    p = sub.add_parser("doctor", help="check the environment; exit 0 ok, 1 fatal, 2 warnings")
    home_opt(p)
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.set_defaults(func=main, supervised="doctor")

    p = sub.add_parser("run", help='run a supervised task: run "PROMPT", run --resume, run --reset',
                       description="Plan and run one task in the workspace, pausing for approvals and models.",
                       epilog=RUN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    home_opt(p)
    p.add_argument("prompt", nargs="?", help="what to do")
    p.add_argument("--resume", action="store_true", help="continue the saved task")
    p.add_argument("--reset", action="store_true", help="clear the saved task and pending approvals")
    p.add_argument("--yes", action="store_true",
                   help="skip task confirmation and path reads (unless manual), also when pending on --resume; "
                        "never a write, an overwrite, network access or skill promotion: answer those on a "
                        "terminal or with `luallm-agent approvals approve ID`")
    p.add_argument("--workspace", help="directory the task works in (default: current directory)")
    p.add_argument("--scripted-replies", help=argparse.SUPPRESS)  # tests: model replies in order
    p.set_defaults(func=main, supervised="run")

    p = sub.add_parser("stop", help="ask a running task to stop (honoured between steps and within a plan)")
    home_opt(p)
    p.add_argument("task_id")
    p.set_defaults(func=main, supervised="stop")

    p = sub.add_parser("log", help="show the audit log")
    home_opt(p)
    p.add_argument("--tail", type=int, default=20, help="last N entries (default 20; 0 = all)")
    p.add_argument("--task", help="only this task's entries")
    p.add_argument("--json", action="store_true", help="print the JSONL entries as they are")
    p.set_defaults(func=main, supervised="log")

    from agent.supervised.approvals_cli import add_parser as add_approvals_parser

    add_approvals_parser(sub, main)


def main(args: argparse.Namespace) -> int:
    from agent.errors import AgentError
    from agent.supervised.home import AgentHome

    home = AgentHome.from_arg(args.home)
    try:
        handler = {"init": _init, "doctor": _doctor, "run": _run, "stop": _stop, "log": _log,
                   "approvals": _approvals}[args.supervised]
        return handler(home, args)
    except AgentError as exc:
        _err(exc.message)
        return EXIT_USAGE


def _init(home: Any, args: argparse.Namespace) -> int:
    from agent.supervised.home import init_home

    report = init_home(home, models=args.model)
    for path in report.created:
        _out(f"created {path}")
    if report.config_kept:
        _out(f"kept existing {home.config_path} (init never overwrites it)")
    _out(f"home ready: {home.root}\nnext: luallm-agent doctor --home {home.root}")
    return 0


def _doctor(home: Any, args: argparse.Namespace) -> int:
    from agent.supervised.doctor import exit_code, render, run_checks

    checks = run_checks(home)
    code = exit_code(checks)
    if args.json:
        _out(json.dumps({"home": str(home.root), "exit_code": code, "checks": [c.to_dict() for c in checks]}))
    else:
        _out(render(checks))
    return code


def _ask(question: str) -> bool:
    sys.stdout.write(f"\n{question}\n  approve? [y/N] ")
    sys.stdout.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def _audit_for(home: Any, config: Any, task_id: str | None) -> Any:
    from agent.supervised.events import TaskAudit

    audit = config.section("audit")
    return TaskAudit(home.audit_path, max_bytes=int(float(audit.get("max_size_mb", 50)) * 1024 * 1024),
                     keep=int(audit.get("max_files", 5)), task_id=task_id)


def _config_or_none(home: Any) -> Any:
    from agent.errors import AgentError

    try:
        return home.config()
    except AgentError:
        return None


def _run(home: Any, args: argparse.Namespace) -> int:
    from agent.errors import AgentError
    from agent.supervised.machine import Machine
    from agent.supervised.models import ModelPicker
    from agent.supervised.progress import Progress, summary_table
    from agent.supervised.state import TERMINAL, load_current
    from agent.supervised.task_states import RunOptions, new_task

    tty = sys.stdin.isatty() and sys.stdout.isatty()
    if args.reset:
        return _reset(home, tty)
    config = home.config()
    current = load_current(home)  # refuses a corrupted state with the exact fix
    if args.resume:
        if args.prompt:
            _err("give either a PROMPT or --resume, not both")
            return EXIT_USAGE
        if current is None:
            _err(f"no task to resume in {home.current_task}")
            return EXIT_USAGE
        if current["status"] in TERMINAL:
            _out(f"task {current['id']} already ended {current['status']}; nothing to resume")
            _out(summary_table(current))
            return 0
        task, resumed = current, True
    else:
        if not args.prompt:
            _err('say what to do: luallm-agent run "PROMPT" (or --resume / --reset)')
            return EXIT_USAGE
        if current is not None and current["status"] not in TERMINAL:
            _err(f"task {current['id']} is in progress ({current['status']}); continue it with "
                 f"`luallm-agent run --resume --home {home.root}` or clear it with `luallm-agent run --reset`")
            return EXIT_USAGE
        workspace = Path(args.workspace or ".").resolve()
        if not workspace.is_dir():
            _err(f"workspace is not a directory: {workspace}")
            return EXIT_USAGE
        task, resumed = new_task(str(uuid.uuid4()), args.prompt, config, workspace), False
    scripted = None
    if args.scripted_replies:
        from agent.models.scripted import ScriptedModel

        try:
            scripted = ScriptedModel.from_file(args.scripted_replies)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _err(f"cannot read --scripted-replies {args.scripted_replies}: {exc}")
            return EXIT_USAGE
    # Checks that can fail before the task exists run first: a refusal here leaves no state behind.
    audit = _audit_for(home, config, None)
    picker = ModelPicker(config, audit, scripted=scripted)
    try:
        picker.preflight()
    except AgentError as exc:
        picker.close()
        _err(exc.message + ("" if resumed else "; no task was created"))
        return EXIT_USAGE
    audit.task_id = task["id"]
    progress = Progress(sys.stdout, live=sys.stdout.isatty())
    options = RunOptions(workspace=Path(task["workspace"]), run_yes=args.yes and not resumed,
                         resume_yes=args.yes and resumed, ask=_ask if tty else None, say=progress.say,
                         show=progress.show)
    _out(f"{'resuming' if resumed else 'task'} {task['id']}  (home {home.root})")
    ended = False
    try:
        outcome = Machine(home, config, task, options, audit, picker).run(resumed=resumed)
        ended = outcome.status in TERMINAL
    finally:
        progress.close()
        picker.close(task_ended=ended)
    if outcome.hints:
        _out("PAUSED (exit 3): " + outcome.hints[0])
        for line in outcome.hints[1:]:
            _out(line)
    else:
        _out(summary_table(outcome.task))
    return outcome.exit_code


def _reset(home: Any, tty: bool) -> int:
    """`run --reset`: end the saved task in both state files and clear it, with the person's consent."""
    from agent.supervised.state import TERMINAL, TaskFiles, clear_current, load_current

    task = None
    try:
        task = load_current(home)
    except Exception:  # a corrupted state is exactly what --reset is for
        pass
    pending = sorted(home.approvals_dir.glob("*.json")) if home.approvals_dir.is_dir() else []
    what = f"task {task['id']} ({task['status']})" if task else "the saved task state"
    if tty and not _ask(f"clear {what} and {len(pending)} pending approval(s)?"):
        _out("nothing cleared")
        return 0
    ended = task is not None and task["status"] not in TERMINAL
    if task is not None:
        # The harness file must not say "running" for a task nobody will resume.
        ended = TaskFiles(home, task["id"]).end_if_open("reset") or ended
    removed = clear_current(home)
    config = _config_or_none(home)
    if config is not None:
        audit = _audit_for(home, config, task["id"] if task else None)
        audit.record("task_reset", removed=removed)
        if task is not None and ended:
            audit.record("task_end", id=task["id"], status="stopped", error=None, termination_reason="reset")
    _out(f"cleared {len(removed)} file(s)" + "".join(f"\n  {r}" for r in removed))
    return 0


def _approvals(home: Any, args: argparse.Namespace) -> int:
    from agent.supervised.approvals_cli import run

    return int(run(home, args, _audit_for, _out))


def _stop(home: Any, args: argparse.Namespace) -> int:
    from agent.supervised.state import request_stop

    if not _TASK_ID.match(args.task_id):
        _err(f"not a task id: {args.task_id!r}")
        return EXIT_USAGE
    if not request_stop(home, args.task_id):
        _err(f"no task {args.task_id} in {home.tasks_dir}")
        return 1
    _out(f"stop requested for task {args.task_id}; it stops before its next step (or kills its running plan)")
    return 0


def _log(home: Any, args: argparse.Namespace) -> int:
    files = sorted(home.state_dir.glob("audit_log.jsonl.*"), key=lambda p: -int(p.suffix[1:]) if
                   p.suffix[1:].isdigit() else 0)
    rows: list[tuple[str, dict[str, Any]]] = []
    for path in [*files, home.audit_path]:
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and (args.task is None or entry.get("task_id") == args.task):
                rows.append((line, entry))
    if args.tail > 0:
        rows = rows[-args.tail:]
    for line, entry in rows:
        if args.json:
            _out(line)
        else:
            raw = entry.get("data")
            data: dict[str, Any] = raw if isinstance(raw, dict) else {}
            brief = " ".join(f"{k}={json.dumps(v, default=str)[:80]}" for k, v in list(data.items())[:6])
            _out(f"{entry.get('ts', '?')}  {str(entry.get('event', '?')):<22} {str(entry.get('task_id') or '-')[:8]}"
                 f"  {brief}")
    return 0
