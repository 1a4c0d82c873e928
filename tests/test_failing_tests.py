"""The failing tests' code quoted under their output: which tests, how much, and when nothing."""

from __future__ import annotations

from agent.roles.failing_tests import failing_test_code

TESTS = '''import unittest

from life import tick


class LifeTest(unittest.TestCase):
    def assertSame(self, got, want):
        self.check(got, want)

    def check(self, got, want):
        if got != want:
            raise AssertionError

    def test_empty(self):
        matrix = []
        expected = []
        self.assertEqual(tick(matrix), expected)

    def test_one(self):
        self.assertEqual(tick([[1]]), [[0]])

    def test_helper(self):
        want = [[0, 0]]
        self.assertSame(tick([[1, 1]]), want)
'''

OUTPUT = '''======================================================================
ERROR: test_empty (life_test.LifeTest.test_empty)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "life_test.py", line 17, in test_empty
    self.assertEqual(tick(matrix), expected)
  File "life.py", line 2, in tick
    rows, cols = len(matrix), len(matrix[0])
IndexError: list index out of range

======================================================================
FAIL: test_helper (life_test.LifeTest.test_helper)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "life_test.py", line 8, in assertSame
    self.check(got, want)
  File "life_test.py", line 12, in check
    raise AssertionError
AssertionError

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "life_test.py", line 24, in test_helper
    self.assertSame(tick([[1, 1]]), want)
AssertionError

======================================================================
FAIL: test_one (life_test.LifeTest.test_one)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "life_test.py", line 20, in test_one
    self.assertEqual(tick([[1]]), [[0]])
AssertionError: Lists differ

----------------------------------------------------------------------
Ran 3 tests in 0.001s

FAILED (failures=2, errors=1)
'''


def _read(rel: str) -> str | None:
    return TESTS if rel == "life_test.py" else "def tick(matrix):\n    rows, cols = len(matrix), len(matrix[0])\n"


def test_the_tests_shown_are_quoted_from_their_def_to_the_failing_line() -> None:
    got = failing_test_code(_read, OUTPUT, OUTPUT, 2000)
    assert got == ("life_test.py lines 14–17:\n```\n    def test_empty(self):\n        matrix = []\n"
                   "        expected = []\n        self.assertEqual(tick(matrix), expected)\n```\n"
                   "life_test.py lines 22–24:\n```\n    def test_helper(self):\n        want = [[0, 0]]\n"
                   "        self.assertSame(tick([[1, 1]]), want)\n```")
    # test_one is its failing line alone, which the traceback shows; life.py is no test file


def test_only_the_failures_the_prompt_shows_and_only_what_fits() -> None:
    shown = OUTPUT.split("FAIL: test_helper")[0]  # a digest that quoted test_empty alone
    got = failing_test_code(_read, OUTPUT, shown, 2000)
    assert "test_empty" in got and "test_helper" not in got
    assert failing_test_code(_read, OUTPUT, OUTPUT, 150).count("```\n") == 1  # the second does not fit
    assert failing_test_code(_read, OUTPUT, OUTPUT, 20) == ""


def test_nothing_to_quote() -> None:
    assert failing_test_code(_read, "", "", 2000) == ""
    assert failing_test_code(lambda rel: None, OUTPUT, OUTPUT, 2000) == ""  # the file is not there
    assert failing_test_code(lambda rel: "def broken(:\n", OUTPUT, OUTPUT, 2000) == ""
    pytest_style = "life_test.py:17: in test_empty\n    self.assertEqual(tick(matrix), expected)\nE   IndexError"
    assert failing_test_code(_read, pytest_style, pytest_style, 2000) == ""  # pytest quotes the source itself
