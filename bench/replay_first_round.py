"""The builder's first replies of a recorded bench run, read again by today's reader and judged.

    python3 bench/replay_first_round.py RUN-replies.jsonl --exercism /work/ex-tasks [--tasks a,b]

A bench run with `--agent-arg=--record=FILE` keeps every exchange. For each task this takes the
first builder reply (to the first request whose prompt quotes the task's goal), writes the files
the agent's reader (`agent.answering.fenced_files`) finds in it into a fresh copy of the task's
workspace, leaving the project's tests as they are (as the rounds do), and runs the task's check.
No model and seconds a task, so a change to how replies are read is measured on real replies
before a run. A reply cut at a stop string is closed as the builder closes it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import lorch_harness as harness  # noqa: E402

from agent.answering.fenced_files import files_in_reply  # noqa: E402
from agent.edits.changes import is_test_path  # noqa: E402


def first_reply(rows: list[dict[str, Any]], goal: str) -> str | None:
    for row in rows:
        messages = row["request"]["messages"]
        if row["request"].get("role") == "builder" and goal[:150] in messages[-1]["content"]:
            reply = row["reply"]
            text = str(reply["text"])
            # a recording made before replies kept their finish_reason: a block left open was cut
            fences = sum(1 for line in text.splitlines() if line.lstrip().startswith("```"))
            cut = reply.get("finish_reason") == "stop_string" if "finish_reason" in reply else fences % 2 == 1
            if cut:
                text += ("" if text.endswith("\n") else "\n") + "```\n"
            return text
    return None


def judge(task: harness.Task, reply: str, ws: Path) -> dict[str, Any]:
    harness.prepare_workspace(task, ws)
    listing = {str(p.relative_to(ws)) for p in ws.rglob("*") if p.is_file()}
    sources = {p: (ws / p).read_text() for p in listing if p.endswith(".py") and not is_test_path(p)}
    written = []
    for f in files_in_reply(reply, listing, sources):
        if is_test_path(f.path) and f.path in listing:
            continue
        target = ws / f.path
        if not target.resolve().is_relative_to(ws.resolve()):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f.content)
        written.append(f.path)
    return {"task": task.name, "files": written, "passed": harness.run_check(task, ws).passed}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("recording", type=Path)
    p.add_argument("--exercism", type=Path, help="the folder of Exercism tasks the run used")
    p.add_argument("--exercism-count", type=int, default=15)
    p.add_argument("--tasks", help="comma-separated task names (default: every task the recording has)")
    args = p.parse_args(argv)
    rows = [json.loads(line) for line in args.recording.read_text().splitlines() if line.strip()]
    tasks = harness.load_tasks() + (harness.exercism_tasks(args.exercism, args.exercism_count) if args.exercism else [])
    if args.tasks:
        tasks = [t for t in tasks if t.name in set(args.tasks.split(","))]
    results = []
    with tempfile.TemporaryDirectory(prefix="luallm-replay-") as tmp:
        for task in tasks:
            reply = first_reply(rows, task.goal)
            if reply is None:
                continue
            results.append(judge(task, reply, Path(tmp) / task.name))
            r = results[-1]
            print(f"{r['task']:28} {'pass' if r['passed'] else 'fail'}  files read: {', '.join(r['files']) or '-'}")
    print(f"first replies that pass the check: {sum(r['passed'] for r in results)} of {len(results)}; "
          f"with no file read: {sum(not r['files'] for r in results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
