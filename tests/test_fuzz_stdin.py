"""Fuzzing stdin: hostile lines into the real agent; 0 crashes, 0 oversize lines, every line answered.

The harness is `bench/fuzz_stdin.py` (run it directly for the 100,000-line figures).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import orjson
import pytest
from support import ROOT, make_command


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_stdin", ROOT / "bench" / "fuzz_stdin.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_stdin"] = module
    spec.loader.exec_module(module)
    return module


fuzz = _harness()


def _assert_clean(result: object) -> None:
    problems = result.problems()  # type: ignore[attr-defined]
    assert problems == [], problems


def test_hostile_lines_are_reproducible_and_never_contain_a_newline() -> None:
    a, b = fuzz.hostile_lines(500, 3), fuzz.hostile_lines(500, 3)
    assert a == b and all(b"\n" not in line for line in a)
    assert any(len(line) > 262_144 for line in fuzz.hostile_lines(3000, 7))  # oversize lines are in the mix


def test_three_thousand_hostile_lines(tmp_path: Path) -> None:
    result = fuzz.run_fuzz(fuzz.hostile_lines(3000, 7), tmp_path, answer_timeout=120)
    _assert_clean(result)
    assert result.completed > 100 and result.rejections["invalid_command"] > 1000
    assert result.rejections["message_too_large"] > 0 and result.longest_line > 200_000


@pytest.mark.slow
def test_one_hundred_thousand_hostile_lines(tmp_path: Path) -> None:
    result = fuzz.run_fuzz(fuzz.hostile_lines(100_000, 7), tmp_path, answer_timeout=1800)
    _assert_clean(result)


def test_the_checker_catches_what_it_must() -> None:
    result = fuzz.FuzzResult(expected_answers=2, alive_after_input=True, exit_code=0)
    ok_event = make_command("implement")  # a command is not a valid stdout message
    fuzz.check_lines([b"x" * 262_144 + b"\n", orjson.dumps(ok_event) + b"\n", b"not json\n"], result)
    problems = " | ".join(result.problems())
    assert "over 262143 bytes" in problems and "3 invalid stdout lines" in problems
    assert "0 answers for 2 non-blank lines" in problems
