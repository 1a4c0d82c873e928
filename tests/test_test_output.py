"""The failures a round shows: one traceback per kind of error first, then what fits, then names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent.test_command import run_tests
from agent.test_output import failure_digest

# Forty tests fail with a wrong value and one with a TypeError: the tail shows only wrong values.
MODULE = "def score(item):\n    return len(item)\n"
TESTS = ("import unittest\n\nfrom scores import score\n\n\nclass T(unittest.TestCase):\n"
         "    def test_a_number(self):\n        self.assertEqual(score(0), 0)\n\n"
         + "".join(f"    def test_name_{i:02}(self):\n        self.assertEqual(score('x{i}'), {i + 100})\n\n"
                   for i in range(40)))


def _project(tmp_path: Path) -> Path:
    (tmp_path / "scores.py").write_text(MODULE)
    (tmp_path / "scores_test.py").write_text(TESTS)
    return tmp_path


@pytest.mark.parametrize("runner", ["unittest", "pytest"])
def test_each_kind_of_error_is_shown_once_in_full_and_the_rest_by_name(tmp_path: Path, runner: str) -> None:
    project = _project(tmp_path)
    cmd = (f"{sys.executable} -m unittest -q scores_test" if runner == "unittest"
           else f"{sys.executable} -m pytest -q -p no:cacheprovider scores_test.py")
    tests = run_tests(cmd, str(project), 60)
    digest = tests["failures"]
    assert tests["status"] == "fail" and len(digest) <= 2000
    assert "test_a_number" in digest and "has no len()" in digest  # the odd one out, which the tail leaves out
    assert "test_a_number" not in tests["output_tail"] and "has no len()" not in tests["output_tail"]
    assert digest.count("AssertionError: 2 != 100") == 1 and digest.count("AssertionError:") == 3  # three of a kind
    assert "(37 more): " in digest and "test_name_39" in digest  # the rest by name
    assert "41 failed" in digest or "FAILED (failures=40, errors=1)" in digest  # the run's own summary
    assert str(project) not in digest


def test_output_in_no_known_shape_gives_no_digest_and_a_passing_run_none(tmp_path: Path) -> None:
    assert failure_digest("make: *** [check] Error 2\n", 2000) == ""
    (tmp_path / "ok_test.py").write_text("import unittest\n\nclass T(unittest.TestCase):\n"
                                         "    def test_ok(self):\n        pass\n")
    tests = run_tests(f"{sys.executable} -m unittest -q ok_test", str(tmp_path), 60)
    assert tests["status"] == "pass" and "failures" not in tests


def test_a_long_traceback_is_cut_in_its_middle_and_the_digest_keeps_its_limit() -> None:
    frames = "".join(f'  File "deep.py", line {i}, in f{i}\n    f{i + 1}()\n' for i in range(200))
    text = ("======\nERROR: test_deep (m.T.test_deep)\n" + "-" * 70 + "\nTraceback (most recent call last):\n"
            + frames + "RecursionError: maximum recursion depth exceeded\n\n" + "-" * 70
            + "\nRan 1 test in 0.1s\n\nFAILED (errors=1)\n")
    digest = failure_digest(text, 1000)
    assert len(digest) <= 1000 and "ERROR: test_deep" in digest and "RecursionError" in digest and "…" in digest
    assert digest.endswith("FAILED (errors=1)")


def test_the_digest_module_runs_without_the_agent_installed() -> None:
    # It is read by the test runner alone: no import of the roles or the model layer.
    out = subprocess.run([sys.executable, "-c", "import sys, agent.test_output as t; "
                          "print(sorted(m for m in sys.modules if m.startswith('agent.')))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['agent.test_output']"
