"""The reviewer judges with the evidence: the project's tests, run on the code under review, are quoted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from role_context import FakeModel, make_context

from agent.command_context import RoleSettings
from agent.roles import reviewer

CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"
TESTS = ("import unittest\n\nimport calc\n\n\nclass T(unittest.TestCase):\n"
         "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n\n"
         "    def test_mul(self):\n        self.assertEqual(calc.mul(2, 3), 6)\n")
APPROVED = json.dumps({"status": "approved", "summary": "ok", "findings": []})


def _review(tmp_path: Path, code: str, test_command: str | None,
            goal: str = "Make add and mul in calc.py right.") -> str:
    (tmp_path / "calc.py").write_text(code)
    (tmp_path / "test_calc.py").write_text(TESTS)
    model = FakeModel([APPROVED])
    ctx = make_context(tmp_path, "review", model, inputs={"goal": goal},
                       settings=RoleSettings(test_command=test_command))
    assert reviewer.handle(ctx).payload["summary"] == "ok"
    return str(model.requests[0].messages[-1]["content"])


def test_failing_tests_are_quoted_with_their_output(tmp_path: Path) -> None:
    prompt = _review(tmp_path, CALC, f"{sys.executable} -m unittest -q test_calc")
    section = prompt.split("## The project's tests, run now\n")[1]
    assert section.startswith("Result: fail (1 of 2 failed")
    assert "test_mul" in section and "AssertionError: 5 != 6" in section


def test_passing_tests_are_stated_and_no_command_means_no_section(tmp_path: Path) -> None:
    right = CALC.replace("return a + b\n", "return a * b\n").replace("return a * b\n", "return a + b\n", 1)
    assert "Result: pass (2 passed)\n" in _review(tmp_path, right, f"{sys.executable} -m unittest -q test_calc")
    assert "## The project's tests" not in _review(tmp_path, right, None)


def test_with_a_test_command_the_test_files_result_is_quoted_instead_of_the_file(tmp_path: Path) -> None:
    with_command = _review(tmp_path, CALC, f"{sys.executable} -m unittest -q test_calc")
    assert "### test_calc.py" not in with_command and "### calc.py" in with_command
    assert "### test_calc.py" in _review(tmp_path, CALC, None)


def test_a_goal_naming_the_test_file_still_gets_its_result_instead_of_the_file(tmp_path: Path) -> None:
    goal = "Implement calc.py so that the tests in test_calc.py pass."
    with_command = _review(tmp_path, CALC, f"{sys.executable} -m unittest -q test_calc", goal)
    assert "### test_calc.py" not in with_command and "## The project's tests, run now" in with_command
    assert "### test_calc.py" in _review(tmp_path, CALC, None, goal)
