"""Without the shared reference beside the repository, the lorch checks say so every time.

The lorch-schema check of every stdout message becomes a warning pytest shows (never a silent
downgrade), and the lorch-fixture test is skipped with its reason printed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import ROOT


def test_missing_shared_reference_is_visible(tmp_path: Path) -> None:
    env = {**os.environ, "LUALLM_AGENT_TEST_SHARED": str(tmp_path / "no-shared-here")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
         "tests/test_stdio_protocol.py::test_starts_with_starting_then_ready", "tests/test_lorch_fixtures.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:]
    assert "LorchSchemasMissing" in out and "checked against our schemas only" in out
    assert "SKIPPED" in out and "what lorch accepts is not checked" in out
