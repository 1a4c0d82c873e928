"""The model-alone baseline (bench/model_alone.py) against a real HTTP server: it writes the files a
reply gives, retries once with the test output, and counts every token it spent, a call that ran
past its time included (the agent counts its own cut calls the same way)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lorch_support import load_bench

from tests.fake_openai import FakeOpenAI, Stream


def _alone() -> Any:
    return load_bench("model_alone.py")


def _project(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "double.py").write_text("def double(x):\n    pass\n")
    (ws / "test_double.py").write_text("import unittest\nfrom double import double\n\n\nclass T(unittest.TestCase):\n"
                                       "    def test_it(self):\n        self.assertEqual(double(2), 4)\n")
    return ws


TEST = f"{sys.executable} -m unittest -q test_double"


def test_a_wrong_first_reply_is_retried_with_the_test_output_and_the_tokens_are_counted(tmp_path: Path) -> None:
    ws = _project(tmp_path)
    wrong = "double.py\n```python\ndef double(x):\n    return x\n```\n"
    right = "double.py\n```python\ndef double(x):\n    return 2 * x\n```\n"
    fake = FakeOpenAI([wrong, right])
    with fake.running():
        out = _alone().solve("make double double", TEST, ws, fake.base_url, "m")
    assert out["passed"] and out["passed_round"] == 2 and out["calls"] == 2 and out["errors"] == []
    assert (ws / "double.py").read_text() == "def double(x):\n    return 2 * x\n"
    assert "The tests failed" in fake.requests[1]["body"]["messages"][-1]["content"]
    assert out["tokens_in"] > 0 and out["tokens_out"] > 0


def test_a_call_past_its_time_still_counts_the_tokens_it_spent(tmp_path: Path) -> None:
    ws = _project(tmp_path)
    endless = Stream(pieces=["double.py\n```python\n", "x = 1\n"], every_s=0.05, forever=True, repeat_from=1)
    fake = FakeOpenAI([endless])
    with fake.running():
        out = _alone().solve("make double double", TEST, ws, fake.base_url, "m", timeout=1.0)
    assert out["errors"] == ["timed out"] and not out["passed"] and out["calls"] == 1
    assert out["tokens_out"] >= 10  # the chunks that came before the time ran out
    assert out["tokens_in"] > 20  # the prompt, at four characters a token
    assert (ws / "double.py").read_text() == "def double(x):\n    pass\n"
