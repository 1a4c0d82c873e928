"""House rules that keep the codebase honest: lint, the error tree, the exported API."""

import re
import shutil
import subprocess
import sys

import pytest
from support import ROOT

import agent.errors as errors


@pytest.mark.skipif(shutil.which("ruff") is None and not (ROOT / ".venv").exists(), reason="ruff not installed")
def test_ruff_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "agent", "tests", "bench", "fixtures"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_spec_states_behaviour_in_at_most_60_kb() -> None:
    assert len((ROOT / "MASTER-SPEC.md").read_bytes()) <= 60_000  # run histories go to docs/real-model.md


def test_error_codes_are_unique_and_documented_in_the_spec() -> None:
    spec = (ROOT / "MASTER-SPEC.md").read_text()
    codes = [cls.code for cls in errors.ALL_CODES.values()]
    assert len(codes) == len(set(codes))
    base = {"agent_error", "protocol_error", "workspace_error", "role_error", "plan_error"}
    missing = [c for c in codes if c not in base and f"`{c}`" not in spec]
    assert missing == []


def test_error_tree_docstring_names_every_class() -> None:
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, errors.AgentError) and obj is not errors.AgentError:
            assert re.search(rf"\b{name}\b", doc), name


def test_no_print_to_stdout_outside_the_cli() -> None:
    """Only the command-line modules (agent/cli/ and each package's cli.py) write to sys.stdout."""
    offenders = []
    for path in (ROOT / "agent").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        # launch.py (the sandbox launcher) and goal_probe.py (the goal's examples, run in the sandbox)
        # run as their own processes: their stdout is never the protocol.
        if rel.startswith(("agent/cli/", "agent/data/")) or rel.endswith("/cli.py") \
                or rel in ("agent/sandbox/launch.py", "agent/roles/goal_probe.py"):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if (re.match(r"\s*print\(", line) and "file=sys.stderr" not in line) or "sys.stdout.write" in line:
                offenders.append(f"{rel}:{n}")
    assert offenders == []


def test_mypy_strict_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
