"""bench/bench_lorch.py's margins: the agent against the model alone, per model, on the tasks both ran."""

from __future__ import annotations

from lorch_support import load_bench


def _row(task: str, success: bool, tokens: int, seconds: float, passed_round: int | None = None) -> dict:
    return {"task": task, "model": "m", "success": success, "tokens_in": tokens, "tokens_out": 0,
            "seconds": seconds, "passed_round": passed_round}


def test_margins_count_fails_ratios_and_the_round_one_solves_lost() -> None:
    bench = load_bench("bench_lorch.py")
    agent = [_row("a", True, 3000, 100), _row("b", True, 1000, 100), _row("c", False, 2000, 400),
             _row("d", False, 10, 10)]  # d: no alone run beside it, so left out
    alone = [_row("a", True, 1000, 50, 1), _row("b", False, 500, 50), _row("c", True, 500, 100, 1)]
    [row] = [line for line in bench.margins(agent, alone) if line.startswith("| m |")]
    # agent: 6,000 tokens and 600 s for 2 solved; alone: 2,000 tokens and 200 s for 2 solved
    assert row == "| m | 3 | 1 | 1 | 3.00× | 3.00× | c |"


def test_margins_say_so_when_a_side_solved_nothing() -> None:
    bench = load_bench("bench_lorch.py")
    [row] = [line for line in bench.margins([_row("a", True, 10, 1)], [_row("a", False, 10, 1)]) if line.startswith("| m |")]
    assert row == "| m | 1 | 0 | 1 | - | - | none |"
