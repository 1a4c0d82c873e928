"""The real lorch, end to end: every task under bench/lorch_tasks x every model, with success measured.

    python bench/bench_lorch.py                                   # qwen-coder-0.5b, all tasks
    python bench/bench_lorch.py --models qwen-coder-0.5b,qwen-coder-1.5b --tasks fix-temperature,feature-cart
    python bench/bench_lorch.py --models qwen-coder-0.5b --answers json      # an agent flag for every role
    python bench/bench_lorch.py --models scripted                 # no model: canned correct answers (harness check)
    python bench/bench_lorch.py --base-url http://127.0.0.1:8080/v1 --model my-model   # a server already running
    python bench/bench_lorch.py --exercism /tmp/ex-tasks --models qwen-coder-1.5b   # the tuning set (below)

The tuning set is `bench/lorch_tasks/` plus `--exercism-count` (default 15) of the exercises in the
folder `--exercism` names, made by `../shared/tools/exercism_tasks.py GIT_DIR OUT --first-letters a-m`
from a fetch of GitHub exercism/python, spread evenly over their names. Never tune on n-z.

**The model alone** (`model_alone.py`) runs on every task with the same server, after the agent,
unless `--no-alone`; `--alone-only` runs just it. The comparison table puts both side by side per
model: tasks solved, pass@1, malformed replies, model calls, tokens, seconds, and the agent's margin.

For each task and model: a fresh copy of the task's workspace, a `lorch.json` running this agent in
all four roles (only the endpoint, the model name and the test command set, plus `--answers` or
`--agent-arg` when given), `lorch run --task T-001` with a wall cap, then the behavioural check
(`bench/lorch_tasks/<task>/check/`, outside the workspace). Success = lorch succeeded (exit 0 and
its "task execution complete" line) AND the check passes.

Resumable: each run leaves `<out>/<label>/<task>/result.json`; a rerun skips what is already there
(`--fresh` redoes it). After every task `<out>/results.json` and `<out>/results.md` are rewritten
with everything measured so far in `<out>` for the selected tasks (other configurations measured
into the same folder are listed after the selected ones, so one table compares them). Models named in the catalogue
(`tests/realmodel/catalog.py`: smollm2, qwen-coder-0.5b, qwen-coder-1.5b) are served one at a time
by llama.cpp (xllamacpp, 1 thread, context 8192).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lorch_harness as harness  # noqa: E402

DEFAULT_OUT = Path("bench-out") / "lorch"


def _label(model: str, agent_args: list[str]) -> str:
    """Folder and table name of one configuration: the model, plus any agent flags that change behaviour."""
    shown = [a for a in agent_args if not a.startswith("--record")]  # recording changes nothing the model sees
    if not shown:
        return model
    return model + "@" + "_".join(a.lstrip("-").replace("=", "-").replace("/", "-") for a in shown)


def _git_head() -> str:
    try:
        head = subprocess.run(["git", "-C", str(harness.ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=False, timeout=10).stdout.strip()
    except OSError:
        head = ""
    return head or os.environ.get("LUALLM_BENCH_COMMIT", "unknown")


def _pct(num: int, den: int) -> str:
    return f"{num}/{den} ({100 * num / den:.0f}%)" if den else "-"


def _end(r: dict[str, Any]) -> str:
    if r["success"]:
        return "success"
    if r.get("timed_out"):
        return "wall cap"
    parts = []
    if r.get("lorch_error"):
        text = str(r["lorch_error"])
        for noise in ("task execution failed: ", "builder test validation failed: ", " (task_id: T-001)"):
            text = text.replace(noise, "")
        parts.append(text[:110])
    elif r.get("lorch_ok"):
        parts.append("lorch ok, check failed: " + str(r.get("check_summary"))[:60])
    codes = sorted(set(r.get("command_failures") or []))
    if codes:
        parts.append("agent: " + ",".join(codes))
    return "; ".join(parts).replace("|", "/") or "failed"


def _plans(r: dict[str, Any]) -> str:
    """Lua plans that compiled and passed the lint / that ran without error, of all plans."""
    n, c = r["lua_plans"], r.get("plan_commands", 0)
    after = f"; last plan of a command valid {r.get('plan_commands_valid', 0)}/{c}" if c else ""
    return f"{r.get('lua_plans_valid', r['lua_plans_ok'])}/{n} / {r['lua_plans_ok']}/{n}{after}" if n else "-"


def markdown(results: list[dict[str, Any]]) -> str:
    head = ["task", "kind", "model", "success", "lorch", "check", "cmds", "review rounds", "spec rounds",
            "model calls", "1st-try valid", "valid after repair", "lua plans valid / ran ok", "s", "end"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        lines.append("| " + " | ".join(str(x) for x in (
            r["task"], r["kind"], r["model"], "**yes**" if r["success"] else "no", "ok" if r["lorch_ok"] else "fail",
            "pass" if r["check_passed"] else "fail", r["commands"], r["review_rounds"], r["spec_rounds"],
            r["model_calls"], _pct(r["answers_valid_first_try"], r["answers"]), _pct(r["answers_valid"], r["answers"]),
            _plans(r), f"{r['seconds']:.0f}", _end(r))) + " |")
    lines += ["", "| model | success | commands | model calls | 1st-try valid | valid after repair | lua plans valid / ran ok | "
              "max s | total s |", "|---|---|---|---|---|---|---|---|---|"]
    for model, rs in summary(results).items():
        stopped = f" ({rs['loops_stopped']} stopped at a loop)" if rs["loops_stopped"] else ""
        lines.append(f"| {model} | {rs['success']}/{rs['runs']} | {rs['commands']} | {rs['model_calls']}{stopped} | "
                     f"{_pct(rs['answers_valid_first_try'], rs['answers'])} | {_pct(rs['answers_valid'], rs['answers'])} | "
                     f"{_plans(rs)} | {rs['max_seconds']:.0f} | {rs['seconds']:.0f} |")
    lines += ["", "| model | action | commands | model calls | 1st-try valid | valid after repair | rejections | failures |",
              "|---|---|---|---|---|---|---|---|"]
    for model, actions in by_action(results).items():
        for action, a in actions.items():
            lines.append(f"| {model} | {action} | {a['commands']} | {a['model_calls']} | "
                         f"{_pct(a['first_try'], a['answers'])} | {_pct(a['valid'], a['answers'])} | "
                         f"{_counts(a['rejections'])} | {_counts(a['failures'])} |")
    return "\n".join(lines + strategies_fired(results)) + "\n"


def strategies_fired(results: list[dict[str, Any]]) -> list[str]:
    """Per model, each named repair that fired: how often, on how many tasks, how many of them solved.
    One that never fires over the tuning set cannot be helping there (issue: switch it off, measure)."""
    rows: dict[tuple[str, str], list[int]] = {}
    for r in results:
        for name, times in (r.get("strategies") or {}).items():
            row = rows.setdefault((r["model"], name), [0, 0, 0])
            row[0] += times
            row[1] += 1
            row[2] += int(bool(r["success"]))
    if not rows:
        return ["", "No named repair fired."]
    lines = ["", "| model | repair fired | times | tasks | of them solved |", "|---|---|---|---|---|"]
    lines += [f"| {m} | {n} | {t} | {k} | {s} |" for (m, n), (t, k, s) in sorted(rows.items())]
    return lines


def _per_solved(rs: list[dict[str, Any]]) -> tuple[float, float] | None:
    """(tokens, seconds) per solved task, None when none was solved."""
    solved = sum(1 for r in rs if r["success"])
    if not solved:
        return None
    tokens = sum(int(r.get("tokens_in_total", r.get("tokens_in", 0))) + int(r.get("tokens_out_total",
                 r.get("tokens_out", 0))) for r in rs)
    return tokens / solved, sum(float(r["seconds"]) for r in rs) / solved


def margins(agent: list[dict[str, Any]], alone: list[dict[str, Any]]) -> list[str]:
    """Per model, on the tasks both ran: the fails of each, what the agent spends per solved task against
    the model alone, and the tasks the model alone solved in its first round that the agent failed."""
    lines = ["", "| model | tasks | agent fails | alone fails | tokens / solved (agent ÷ alone) | s / solved "
             "(agent ÷ alone) | alone's round-1 solves the agent failed |", "|---|---|---|---|---|---|---|"]
    for model in dict.fromkeys(r["model"] for r in agent):
        by_task = {r["task"]: r for r in alone if r["model"] == model}
        ours = [r for r in agent if r["model"] == model and r["task"] in by_task]
        if not ours:
            continue
        theirs = [by_task[r["task"]] for r in ours]
        mine, base = _per_solved(ours), _per_solved(theirs)
        ratio = [f"{m / b:.2f}×" if mine and base else "-" for m, b in zip(mine or (0, 0), base or (0, 0), strict=True)]
        lost = [r["task"] for r in ours if not r["success"] and by_task[r["task"]]["success"]
                and by_task[r["task"]].get("passed_round") == 1]
        lines.append(f"| {model} | {len(ours)} | {sum(not r['success'] for r in ours)} | "
                     f"{sum(not r['success'] for r in theirs)} | {ratio[0]} | {ratio[1]} | {', '.join(lost) or 'none'} |")
    return lines


def comparison(agent: list[dict[str, Any]], alone: list[dict[str, Any]]) -> str:
    """Per model: the agent under lorch beside the model alone on the same tasks, then task by task."""
    head = ["model", "runner", "solved", "pass@1", "malformed replies", "model calls", "tokens in", "tokens out",
            "s / task", "tokens / solved", "s / solved", "margin (solved)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for model in dict.fromkeys(r["model"] for r in agent + alone):
        rows = {"agent": [r for r in agent if r["model"] == model], "alone": [r for r in alone if r["model"] == model]}
        solved = {k: sum(1 for r in v if r["success"]) for k, v in rows.items()}
        for runner, rs in rows.items():
            if not rs:
                continue
            n = len(rs)
            # pass@1: solved, and with the first answer (the agent: its first implement's first round)
            first = sum(1 for r in rs if r["success"] and (r.get("first_answer_passed") if runner == "agent"
                                                           else r.get("passed_round") == 1))
            calls = sum(int(r.get("model_calls", r.get("calls", 0))) for r in rs)
            t_in = sum(int(r.get("tokens_in_total", r.get("tokens_in", 0))) for r in rs)
            t_out = sum(int(r.get("tokens_out_total", r.get("tokens_out", 0))) for r in rs)
            secs = sum(float(r["seconds"]) for r in rs)
            s_n = solved[runner]
            margin = f"{s_n - solved['alone']:+d}" if runner == "agent" and rows["alone"] else ""
            per = _per_solved(rs)
            lines.append("| " + " | ".join(str(x) for x in (
                model, runner, f"{s_n}/{n}", f"{first}/{n}", sum(int(r.get("malformed", 0)) for r in rs), calls,
                t_in, t_out, f"{secs / n:.0f}", *([f"{x:.0f}" for x in per] if per else ["-", "-"]), margin)) + " |")
    lines += margins(agent, alone)
    lines += ["", "| task | model | agent | model alone |", "|---|---|---|---|"]
    by_key = {(r["task"], r["model"]): r for r in alone}
    for r in agent:
        a = by_key.get((r["task"], r["model"]))
        shown = "-" if a is None else (f"**yes** (round {a['passed_round']})" if a["success"] else "no")
        lines.append(f"| {r['task']} | {r['model']} | {'**yes**' if r['success'] else 'no: ' + _end(r)[:80]} | {shown} |")
    return "\n".join(lines) + "\n"


def _counts(codes: list[str]) -> str:
    tally: dict[str, int] = {}
    for code in codes:
        tally[code] = tally.get(code, 0) + 1
    return ", ".join(f"{c} ×{n}" for c, n in sorted(tally.items())) or "-"


def by_action(results: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per model and lorch action: answer validity summed over the tasks."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        for action, a in (r.get("by_action") or {}).items():
            t = out.setdefault(r["model"], {}).setdefault(action, {"commands": 0, "model_calls": 0, "answers": 0,
                                                                   "first_try": 0, "valid": 0, "rejections": [],
                                                                   "failures": []})
            for key in ("commands", "model_calls", "answers", "first_try", "valid"):
                t[key] += a[key]
            t["rejections"] += a["rejections"]
            t["failures"] += a["failures"]
    return out


def summary(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        s = out.setdefault(r["model"], {"runs": 0, "success": 0, "commands": 0, "model_calls": 0, "answers": 0,
                                        "answers_valid_first_try": 0, "answers_valid": 0, "lua_plans": 0,
                                        "lua_plans_ok": 0, "lua_plans_valid": 0, "plan_commands": 0,
                                        "plan_commands_valid": 0, "loops_stopped": 0, "seconds": 0.0,
                                        "max_seconds": 0.0, "max_commands": 0})
        s["runs"] += 1
        s["success"] += int(bool(r["success"]))
        for key in ("commands", "model_calls", "answers", "answers_valid_first_try", "answers_valid", "lua_plans",
                    "lua_plans_ok", "lua_plans_valid", "plan_commands", "plan_commands_valid", "seconds"):
            s[key] += r[key]
        s["loops_stopped"] += r.get("loops_stopped", 0)
        s["max_seconds"] = max(s["max_seconds"], r["seconds"])
        s["max_commands"] = max(s["max_commands"], r["commands"])
    return out


def _collect(out: Path, labels: list[str], tasks: list[harness.Task], sub: str = "") -> list[dict[str, Any]]:
    """Every result for the selected tasks in `out`: the selected labels first, then any other
    configuration measured into the same folder earlier (so one report compares them).
    `sub` "alone" reads the model-alone results kept beside each label's."""
    others = sorted(d.name for d in out.iterdir() if d.is_dir() and d.name not in labels
                    and any(d.glob(f"{sub}/*/result.json" if sub else "*/result.json")))
    results = []
    for label in [*labels, *others]:
        for task in tasks:
            path = out / label / sub / task.name / "result.json"
            if path.is_file():
                results.append(json.loads(path.read_text()))
    return results


def _write_reports(out: Path, labels: list[str], tasks: list[harness.Task], meta: dict[str, Any],
                   json_path: Path | None) -> list[dict[str, Any]]:
    results = _collect(out, labels, tasks)
    alone = _collect(out, labels, tasks, "alone")
    doc = {"meta": meta, "summary": summary(results), "results": results, "alone": alone}
    (out / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "results.md").write_text(comparison(results, alone) + "\n" + markdown(results))
    if json_path:
        json_path.write_text(json.dumps(doc, indent=2) + "\n")
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="qwen-coder-0.5b",
                   help="comma-separated catalogue models (smollm2, qwen-coder-0.5b, qwen-coder-1.5b) or 'scripted'")
    p.add_argument("--tasks", help="comma-separated task names (default: all of bench/lorch_tasks and the exercises)")
    p.add_argument("--exercism", type=Path, help="a folder of tasks made by ../shared/tools/exercism_tasks.py (a-m only)")
    p.add_argument("--exercism-count", type=int, default=15, help="exercises taken, evenly spread (default 15; 0: all)")
    p.add_argument("--no-alone", action="store_true", help="skip the model-alone baseline")
    p.add_argument("--alone-only", action="store_true", help="run only the model-alone baseline")
    p.add_argument("--answers", help="pass --answers VALUE to every agent (default: the agent's own default)")
    p.add_argument("--agent-arg", action="append", default=[], metavar="ARG",
                   help="another agent flag for every role (repeatable), e.g. --agent-arg=--max-repairs=3")
    p.add_argument("--base-url", help="use this running OpenAI-compatible server instead of serving --models")
    p.add_argument("--model", help="the model name for --base-url")
    p.add_argument("--wall-cap", type=float, default=720.0, help="seconds per task before lorch is stopped (default 720)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results folder (default {DEFAULT_OUT})")
    p.add_argument("--fresh", action="store_true", help="rerun tasks that already have a result")
    p.add_argument("--remeasure", action="store_true",
                   help="recompute the log-derived figures of existing results from their kept workspaces, run nothing")
    p.add_argument("--json", dest="json_path", type=Path, help="also write the results JSON here")
    p.add_argument("--lorch", type=Path, help="the lorch binary (default: $LUALLM_LORCH_BIN, /work/lorch-bin/lorch, PATH)")
    p.add_argument("--threads", type=int, help="llama.cpp threads (default 1)")
    p.add_argument("--ctx", type=int, default=8192, help="context size (default 8192)")
    args = p.parse_args(argv)

    lorch = args.lorch or harness.find_lorch()
    reason = None if args.lorch else harness.lorch_unavailable_reason()
    if lorch is None or reason:
        print(f"real lorch unavailable: {reason}", file=sys.stderr)
        return 2
    tasks = harness.load_tasks() + (harness.exercism_tasks(args.exercism, args.exercism_count) if args.exercism else [])
    if args.tasks:
        wanted = [t.strip() for t in args.tasks.split(",") if t.strip()]
        known = {t.name: t for t in tasks}
        missing = [w for w in wanted if w not in known]
        if missing:
            print(f"unknown task(s): {', '.join(missing)} (known: {', '.join(known)})", file=sys.stderr)
            return 2
        tasks = [known[w] for w in wanted]
    agent_args = ([f"--answers={args.answers}"] if args.answers else []) + list(args.agent_arg)
    models = [args.model or "external"] if args.base_url else [m.strip() for m in args.models.split(",") if m.strip()]
    labels = [_label(m, agent_args) for m in models]
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"agent_commit": _git_head(), "lorch": str(lorch), "tasks": [t.name for t in tasks], "models": models,
            "agent_args": agent_args, "wall_cap_s": args.wall_cap, "ctx": args.ctx, "threads": args.threads or 1,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(f"lorch {lorch}; agent {meta['agent_commit']}; tasks {', '.join(meta['tasks'])}; out {args.out}", flush=True)
    if args.remeasure:
        for label in labels:
            for task in tasks:
                path = args.out / label / task.name / "result.json"
                if path.is_file():
                    r = json.loads(path.read_text())
                    r.update(harness.measure(Path(r["workspace"])))
                    path.write_text(json.dumps(r, indent=2) + "\n")
        print(markdown(_write_reports(args.out, labels, tasks, meta, args.json_path)))
        return 0

    for model, label in zip(models, labels, strict=True):
        todo = [] if args.alone_only else \
            [t for t in tasks if args.fresh or not (args.out / label / t.name / "result.json").is_file()]
        alone_todo = [] if args.no_alone or model == "scripted" else \
            [t for t in tasks if args.fresh or not (args.out / label / "alone" / t.name / "result.json").is_file()]
        if not todo and not alone_todo:
            print(f"[{label}] all {len(tasks)} tasks already measured (--fresh reruns)", flush=True)
            continue
        server = None
        spec: harness.RunSpec
        if model == "scripted":
            spec = harness.RunSpec(label, scripted=True, agent_args=agent_args)
        elif args.base_url:
            spec = harness.RunSpec(label, base_url=args.base_url.rstrip("/"), model=args.model, agent_args=agent_args)
        else:
            srv = harness.server_module()
            try:
                server = srv.start_server(model_name=model, n_ctx=args.ctx, threads=args.threads,
                                          log_dir=args.out / label)
            except srv.Unavailable as exc:
                print(f"[{label}] model unavailable: {exc}", file=sys.stderr, flush=True)
                continue
            spec = harness.RunSpec(label, base_url=server.base_url, model=server.model, agent_args=agent_args)
            print(f"[{label}] serving {model} at {server.base_url} (context {server.n_ctx})", flush=True)
        try:
            for task in todo:
                print(f"[{label}] {task.name} ({task.kind}) ...", flush=True)
                r = harness.run_task(task, spec, args.out / label / task.name, lorch=lorch, wall_cap=args.wall_cap)
                print(f"[{label}] {task.name}: LORCH RESULT: {'success' if r['lorch_ok'] else 'failure'}; "
                      f"check {'pass' if r['check_passed'] else 'fail'}; success={r['success']}; {r['commands']} cmds "
                      f"{r['commands_by_action']}; {r['model_calls']} model calls; {r['seconds']:.0f}s; {_end(r)}",
                      flush=True)
                _write_reports(args.out, labels, tasks, meta, args.json_path)
            for task in alone_todo:
                assert spec.base_url and spec.model
                a = harness.run_alone(task, spec.base_url, spec.model, label, args.out / label / "alone" / task.name)
                print(f"[{label}] {task.name}: MODEL ALONE: success={a['success']} (round {a['passed_round']}); "
                      f"{a['calls']} calls; {a['seconds']:.0f}s", flush=True)
                _write_reports(args.out, labels, tasks, meta, args.json_path)
        finally:
            if server is not None:
                server.stop()
    results = _write_reports(args.out, labels, tasks, meta, args.json_path)
    print()
    print(comparison(results, _collect(args.out, labels, tasks, "alone")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
