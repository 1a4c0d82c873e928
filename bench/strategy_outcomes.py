"""What each named strategy's builder rounds came to, read from a benchmark run's audit logs.

    python bench/strategy_outcomes.py /work/bench-out/W [more run folders]   # a table
    python bench/strategy_outcomes.py --json RUN...

A strategy that shapes a builder round (how it is asked, how its reply is begun or read) is
credited with what that round came to against the best state before it: `pass` (the tests all
pass), `better` (more tests pass), `same`, `worse` (rolled back), `unusable` (no change could be
taken from the reply). One that ends the rounds or acts after them is only counted (`fired`).
Rounds are no counterfactual: a strategy whose rounds never pass or move a test forward, over many
runs, is the one to switch off in a benchmark run (`--agent-arg=--disable-repair=NAME`) and then
remove (MASTER-SPEC §12). Rounds no strategy shaped are counted apart, as the baseline: round 1, and
later rounds shown the failures as they are.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lorch_harness as harness  # noqa: E402

# Decided while a round's reply is read, it shapes the round after (what that round asks for).
_SHAPES_NEXT = frozenset({"ask_definition_alone"})
OUTCOMES = ("pass", "better", "same", "worse", "unusable")
ROUND_ONE, PLAIN = "(round 1, no strategy)", "(later round, no strategy)"


def _outcome(event: dict[str, Any], best: int | None) -> str:
    if event.get("event") == "reply_unusable":
        return "unusable"
    if event.get("tests") == "pass":
        return "pass"
    if event.get("outcome") != "kept":
        return "worse"
    return "better" if best is None or int(event.get("passed") or 0) > best else "same"


def tally(events: Iterable[dict[str, Any]], counts: dict[str, collections.Counter[str]]) -> None:
    """Add one command log's rounds to `counts` (strategy → outcome → rounds)."""
    pending: list[str] = []  # strategies that shape the next round of the builder
    carried: list[str] = []  # decided in the last round, shaping this one
    best: int | None = None
    for e in events:
        kind = e.get("event")
        if kind == "repair_applied":
            pending.append(str(e.get("name")))
        elif kind == "model_call" and e.get("role") not in (None, "builder"):
            for name in pending:  # acted on a review, a spec answer, or after the rounds
                counts[name]["fired"] += 1
            pending = []
        elif kind in ("builder_round", "reply_unusable"):
            if e.get("round") == 1:
                best, carried = None, []
            result = _outcome(e, best)
            shaping = [n for n in pending if n not in _SHAPES_NEXT]
            # A round no strategy shaped is the baseline the others are read against.
            for name in {*shaping, *carried} or {ROUND_ONE if e.get("round") == 1 else PLAIN}:
                counts[name][result] += 1
            carried = [n for n in pending if n in _SHAPES_NEXT]
            pending = []
            if kind == "builder_round" and e.get("outcome") == "kept":
                best = int(e.get("passed") or 0)
    for name in pending:
        counts[name]["fired"] += 1


def collect(runs: list[Path]) -> dict[str, collections.Counter[str]]:
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for run in runs:
        for ws in sorted(run.glob("*/*/ws")):
            tally(harness.audit_events(ws), counts)
    return counts


def table(counts: dict[str, collections.Counter[str]]) -> str:
    rows = ["| strategy | rounds | " + " | ".join(OUTCOMES) + " | fired outside rounds |",
            "|---|---|" + "---|" * len(OUTCOMES) + "---|"]
    for name in sorted(counts, key=lambda n: -sum(counts[n].values())):
        c = counts[name]
        rounds = sum(c[o] for o in OUTCOMES)
        rows.append(f"| {name} | {rounds} | " + " | ".join(str(c[o]) for o in OUTCOMES) + f" | {c['fired']} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="benchmark output folders (bench_lorch.py --out)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    missing = [str(r) for r in args.runs if not r.is_dir()]
    if missing:
        print(f"strategy_outcomes: no such folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    counts = collect(args.runs)
    print(json.dumps({k: dict(v) for k, v in counts.items()}, indent=1, sort_keys=True) if args.json else table(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
