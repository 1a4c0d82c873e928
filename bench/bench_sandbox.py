"""Benchmark of the OS boundary: run with `python bench/bench_sandbox.py`. Not part of the tests.

Prints the start-up cost of one command (`true`) as `tools.run` runs it — inside each available
boundary mode, through the launcher without a boundary (mode none), and started directly as before
the boundary existed — with medians, p90s and the ratio to the direct start; the launcher is a
Python process, so the start of a bare `python -I -S` is shown as the floor it cannot go under.
Then the same for `python3 -c pass` (a heavier command, where the fixed cost matters less), and
the cost of the plan worker confining itself.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.plans.commands import run_command  # noqa: E402
from agent.sandbox import detect  # noqa: E402
from agent.sandbox.plan_worker import worker_policy  # noqa: E402
from agent.sandbox.policy import BWRAP, LANDLOCK, LANDLOCK_NS, NONE  # noqa: E402


def _force(mode: str) -> bool:
    detect._overrides.update(mode=mode, unsandboxed=mode == NONE)  # bench only: force a mode
    detect._boundary = None
    return detect.current().mode == mode


def _times(fn, n: int) -> list[float]:  # type: ignore[no-untyped-def]
    fn()  # warm caches (read grants, page cache)
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _row(label: str, ts: list[float], base: float) -> str:
    med = statistics.median(ts)
    p90 = sorted(ts)[int(len(ts) * 0.9) - 1]
    return f"  {label:<34} median {med * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   x{med / base:6.1f}"


def bench_commands(cmd: list[str], n: int, ws: str) -> None:
    line = " ".join(cmd)
    direct = _times(lambda: subprocess.run(cmd, cwd=ws, check=False, stdout=subprocess.DEVNULL), n)
    base = statistics.median(direct)
    print(f"\n`{line}`, {n} runs each (ratio: to a direct subprocess start)")
    print(_row("direct subprocess (no boundary)", direct, base))
    floor = _times(lambda: subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=False), n)
    print(_row("(interpreter floor: python -I -S)", floor, base))
    allow = [cmd[0]]
    for mode in (NONE, LANDLOCK_NS, LANDLOCK, BWRAP):
        if not _force(mode):
            print(f"  {mode:<34} not available here ({detect.current().reason})")
            continue
        label = "launcher only (mode none)" if mode == NONE else mode
        ts = _times(lambda: run_command(line, root=ws, allow=allow, timeout_s=30, output_cap=4096), n)
        print(_row(label, ts, base))


def bench_worker_confinement(n: int, ws: str) -> None:
    _force("auto")
    policy = worker_policy(ws)
    if policy is None:
        return
    code = ("import sys, time; from agent.sandbox.confine import confine_worker; "
            "from agent.sandbox.policy import Policy; p = Policy.from_text(sys.argv[1]); "
            "t = time.perf_counter(); confine_worker(p); print(time.perf_counter() - t)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    ts = [float(subprocess.run([sys.executable, "-c", code, policy.to_text()], capture_output=True, text=True,
                               env=env, check=True).stdout) for _ in range(n)]
    print(f"\nplan worker confining itself (Landlock + seccomp), {n} runs: median "
          f"{statistics.median(ts) * 1000:.2f} ms, max {max(ts) * 1000:.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=30, help="runs per variant (default 30)")
    args = parser.parse_args()
    print(detect.current().describe())
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as ws:
        bench_commands(["true"], args.n, ws)
        bench_commands([sys.executable, "-c", "pass"], max(5, args.n // 3), ws)
        bench_worker_confinement(max(5, args.n // 3), ws)
    return 0


if __name__ == "__main__":
    sys.exit(main())
