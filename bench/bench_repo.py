"""Per-command cost against repository size, measured in one run, with figures and ratios.

    python3 bench/bench_repo.py [--quick]

Workspaces: 10 files; 10,000 files; 10,000 files plus a 50,000-file `node_modules/` that
`.gitignore` ignores. For each, through the real agent (reviewer role, recorded replies):
  * cold first command (a fresh process: full walk + hash, a scripted model reply)
  * replay latency of a repeated command (receipt hit: digest twice per command)
and in-process:
  * warm digest of 10,000 files (nothing changed; inotify drained)            target ≤ 20 ms
  * tools.grep over 10,000 files vs `rg` itself
Targets (issue: real repositories): replay(10k) ≤ 2× replay(10); adding the ignored
node_modules ≤ 1.2×; replay ≥ 500 commands/s on the 10-file workspace.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from support import make_command  # noqa: E402

from agent.conductor import AgentProcess, is_terminal  # noqa: E402

REVIEW = json.dumps({"status": "approved", "summary": "looks right", "findings": []})


def make_tree(root: Path, files: int, ignored: int = 0) -> None:
    root.mkdir(parents=True)
    per_dir = 100
    for i in range(files):
        d = root / "src" / f"pkg{i // per_dir:03d}"
        if i % per_dir == 0:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i:05d}.py").write_text(f"def f{i}():\n    return {i}  # needle{i % 97}\n")
    if ignored:
        (root / ".gitignore").write_text("node_modules/\n")
        for i in range(ignored):
            d = root / "node_modules" / f"dep{i // per_dir:04d}"
            if i % per_dir == 0:
                d.mkdir(parents=True, exist_ok=True)
            (d / f"index{i:05d}.js").write_text(f"module.exports = {i} // needle{i % 97}\n")


def argv(ws: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "agent", "stdio", "--role", "reviewer", "--workspace", str(ws),
            "--heartbeat-interval", "5", "--max-stdout-logs", "0", *extra]


def one(agent: AgentProcess, cmd: dict) -> float:
    t0 = time.perf_counter()
    agent.send(cmd)
    got = agent.until(lambda m: is_terminal("reviewer", m, cmd["task_id"]), 120)
    assert got and got[-1].get("event") == "review.completed", got[-1:]
    return time.perf_counter() - t0


def bench_workspace(ws: Path, replies: Path, cmd: dict, repeats: int) -> tuple[float, float]:
    """(cold first command seconds, median replay seconds)."""
    # Scripted replies, not a recording: the reviewer's prompt quotes the workspace, so a recording
    # made in one workspace would miss in another.
    a = AgentProcess("reviewer", argv(ws, "--scripted-replies", str(replies)))
    a.until(lambda m: m.get("status") == "ready", 60)
    cold = one(a, cmd)
    times = [one(a, cmd) for _ in range(repeats)]
    a.close()
    return cold, statistics.median(times)


def scripted_review(tmp: Path) -> Path:
    replies = tmp / "replies.json"
    replies.write_text(json.dumps([REVIEW]))
    return replies


def bench_digest(ws: Path, tries: int) -> tuple[float, float]:
    from agent.workspace_state import DigestState

    state = DigestState(str(ws))
    t0 = time.perf_counter()
    state.digest()
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(tries):
        t0 = time.perf_counter()
        state.digest()
        warm.append(time.perf_counter() - t0)
    state.close()
    return cold, statistics.median(warm)


def bench_grep(ws: Path, tries: int) -> tuple[float, float, float]:
    """(tools.grep with rg, tools.grep in Python, rg alone) median seconds for a 10-hit query."""
    from agent.plans.limits import PlanLimits
    from agent.plans.search import ripgrep_binary
    from agent.plans.tools import ToolBox
    from agent.workspace import Workspace

    class Bridge:
        def call_llm(self, prompt: str, opts: dict) -> str:
            return ""

        def progress(self, message: str) -> None: ...
        def log(self, message: str) -> None: ...
        def spawned(self, pgid: int) -> None: ...

    def timed(fn) -> float:  # type: ignore[no-untyped-def]
        ts = []
        for _ in range(tries):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    def tool() -> None:
        box = ToolBox(Workspace(ws), PlanLimits(tool_calls=10**6), Bridge(), deadline=time.monotonic() + 60)
        hits = box.call("grep", [b"needle42$", {"max_results": 1000}])
        assert isinstance(hits, list) and len(hits) > 10, hits

    rg = ripgrep_binary()
    with_rg = timed(tool) if rg else float("nan")
    os.environ["LUALLM_AGENT_RIPGREP"] = "0"
    ripgrep_binary.cache_clear()
    python = timed(tool)
    del os.environ["LUALLM_AGENT_RIPGREP"]
    ripgrep_binary.cache_clear()
    alone = timed(lambda: subprocess.run([rg, "-n", "needle42$", "."], cwd=ws, stdout=subprocess.DEVNULL,
                                         check=False)) if rg else float("nan")
    return with_rg, python, alone


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repeats (figures get noisier)")
    args = ap.parse_args()
    repeats = 50 if args.quick else 300
    tmp = Path(tempfile.mkdtemp(prefix="bench-repo-"))
    try:
        cmd = make_command("review", task_id="T-0001")
        rec = scripted_review(tmp)
        sizes = {"10 files": (10, 0), "10,000 files": (10_000, 0),
                 "10,000 + 50,000 ignored": (10_000, 50_000)}
        results = {}
        for name, (n, ignored) in sizes.items():
            ws = tmp / name.replace(" ", "_").replace(",", "")
            make_tree(ws, n, ignored)
            cold, replay = bench_workspace(ws, rec, cmd, repeats)
            results[name] = (cold, replay)
            print(f"{name:>26}: cold first command {cold * 1000:8.1f} ms, replay {replay * 1000:6.2f} ms "
                  f"({1 / replay:7.0f} commands/s)")
        small, big, vendored = (results[k][1] for k in sizes)
        print(f"replay ratio 10,000 / 10 files: {big / small:.2f}x (target <= 2x)")
        print(f"replay ratio with ignored node_modules / without: {vendored / big:.2f}x (target <= 1.2x)")
        print(f"replay on 10 files: {1 / small:.0f} commands/s (target >= 500)")
        ws10k = tmp / "10000_files"
        cold_d, warm_d = bench_digest(ws10k, 200)
        print(f"digest of 10,000 files: cold {cold_d * 1000:.1f} ms, warm {warm_d * 1000:.3f} ms (target <= 20 ms)")
        with_rg, python, alone = bench_grep(ws10k, 5 if args.quick else 15)
        print(f"tools.grep over 10,000 files: with rg {with_rg * 1000:.1f} ms, Python fallback {python * 1000:.1f} ms, "
              f"rg alone {alone * 1000:.1f} ms (tools.grep/rg {with_rg / alone:.2f}x; Python/rg {python / alone:.1f}x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
