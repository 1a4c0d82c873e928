"""bench/strategy_outcomes.py: each strategy credited with the builder rounds it shaped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lorch_support import load_bench

ROOT = Path(__file__).resolve().parent.parent


def _run_folder(tmp_path: Path, events: list[dict]) -> Path:
    log = tmp_path / "run" / "qwen" / "task" / "ws" / "logs" / "luallm-agent" / "audit.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("".join(json.dumps(e) + "\n" for e in events) + '{"cut off')
    return tmp_path / "run"


def test_each_round_is_credited_to_the_strategies_that_shaped_it(tmp_path: Path) -> None:
    run = _run_folder(tmp_path, [
        {"event": "repair_applied", "name": "write_goal_tests"},
        {"event": "model_call", "role": "builder"},
        {"event": "builder_round", "round": 1, "outcome": "kept", "tests": "fail", "passed": 1},
        {"event": "repair_applied", "name": "reason_before_fixing"},
        {"event": "repair_applied", "name": "ask_definition_alone"},  # read in round 2, shapes round 3
        {"event": "reply_unusable", "round": 2},
        {"event": "repair_applied", "name": "fresh_attempt"},
        {"event": "builder_round", "round": 3, "outcome": "rolled back", "tests": "fail", "passed": 0},
        {"event": "repair_applied", "name": "fresh_attempt"},
        {"event": "builder_round", "round": 4, "outcome": "kept", "tests": "pass", "passed": 2},
        {"event": "repair_applied", "name": "take_out_own_tests"},
        {"event": "model_call", "role": "reviewer"},
        {"event": "log", "message": "command accepted"},  # a command whose rounds no strategy shaped
        {"event": "builder_round", "round": 1, "outcome": "kept", "tests": "fail", "passed": 1},
        {"event": "builder_round", "round": 2, "outcome": "kept", "tests": "fail", "passed": 1},
    ])
    counts = load_bench("strategy_outcomes.py").collect([run])
    assert {k: dict(v) for k, v in counts.items()} == {
        "write_goal_tests": {"better": 1}, "reason_before_fixing": {"unusable": 1},
        "ask_definition_alone": {"worse": 1}, "fresh_attempt": {"worse": 1, "pass": 1},
        "take_out_own_tests": {"fired": 1}, "(round 1, no strategy)": {"better": 1},
        "(later round, no strategy)": {"same": 1}}


def test_the_table_and_a_missing_folder(tmp_path: Path) -> None:
    run = _run_folder(tmp_path, [{"event": "repair_applied", "name": "fresh_attempt"},
                                 {"event": "reply_unusable", "round": 1}])
    script = str(ROOT / "bench" / "strategy_outcomes.py")
    out = subprocess.run([sys.executable, script, str(run)], capture_output=True, text=True, check=True).stdout
    assert "| fresh_attempt | 1 | 0 | 0 | 0 | 0 | 1 | 0 |" in out
    bad = subprocess.run([sys.executable, script, str(tmp_path / "nope")], capture_output=True, text=True)
    assert bad.returncode == 2 and "no such folder" in bad.stderr and not bad.stdout
