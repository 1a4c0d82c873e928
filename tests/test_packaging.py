"""A normal (non-editable) install works: schemas, prompts and the demo are package data.

The wheel is built once from a clean copy of the source, installed with `--no-deps` into a fresh
venv that sees this environment's dependencies, and run from a directory outside the repository.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from support import ROOT, make_command

_IGNORE = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".venv")


def _clean_env() -> dict[str, str]:
    # The test run itself may import this checkout through PYTHONPATH; the venv must not.
    return {k: v for k, v in os.environ.items()
            if k != "PYTHONPATH" and not k.startswith(("OPENAI_", "LUALLM_AGENT_")) and k != "AGENT_TYPE"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh venv with the wheel of this checkout installed (not editable)."""
    if importlib.util.find_spec("wheel") is None:  # setuptools < 70.1 builds wheels with it
        pytest.fail("building the wheel needs the 'wheel' package: python3 -m pip install -e '.[dev]'")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=_IGNORE)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp / "dist"), str(src)], check=True, capture_output=True, env=_clean_env(),
                   timeout=300)
    wheel = next((tmp / "dist").glob("luallm_agent-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, env=_clean_env(), timeout=300)
    return venv / "bin"


def _run(bindir: Path, *args: str, cwd: Path, stdin: Path | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    with open(stdin or os.devnull, "rb") as fh:
        return subprocess.run([str(bindir / "luallm-agent"), *args], stdin=fh, capture_output=True, cwd=cwd,
                              env=_clean_env(), timeout=timeout)


def test_installed_agent_is_the_wheel_not_this_checkout(installed: Path, tmp_path: Path) -> None:
    out = subprocess.run([str(installed / "python"), "-c", "import agent; print(agent.__file__)"],
                         capture_output=True, text=True, cwd=tmp_path, env=_clean_env(), check=True).stdout
    assert "site-packages" in out and str(ROOT) not in out


def test_schemas_prints_an_existing_directory_and_dumps_them(installed: Path, tmp_path: Path) -> None:
    proc = _run(installed, "schemas", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    where = Path(proc.stdout.decode().strip())
    assert (where / "command.schema.json").is_file() and (where / "answers" / "reviewer.json").is_file()
    proc = _run(installed, "schemas", "--dump", str(tmp_path / "copy"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    dumped = sorted(p.relative_to(tmp_path / "copy").as_posix() for p in (tmp_path / "copy").rglob("*.json"))
    shipped = sorted(p.relative_to(ROOT / "schemas").as_posix() for p in (ROOT / "schemas").rglob("*.json"))
    assert dumped == shipped


def test_demo_runs_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    proc = _run(installed, "demo", "--workspace", str(tmp_path / "demo"), cwd=tmp_path, timeout=240)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out[-3000:] + proc.stderr.decode()[-3000:]
    assert "7 commands, 0 without a successful terminal event" in out
    assert "spec.updated" in out


def test_stdio_validates_commands_and_answers_one(installed: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    bad = make_command("implement", task_id="T-bad")
    bad["to"]["agent_type"] = "nobody"
    good = make_command("implement", task_id="T-good")
    stdin = tmp_path / "commands.ndjson"  # a regular file: every command is answered (--drain)
    stdin.write_bytes(orjson.dumps(bad) + b"\n" + orjson.dumps(good) + b"\n")
    proc = _run(installed, "stdio", "--role", "builder", "--workspace", str(ws), cwd=tmp_path, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    msgs = [json.loads(line) for line in proc.stdout.splitlines()]
    events = [m for m in msgs if m["kind"] == "event"]
    rejected = [m for m in events if m["task_id"] == "T-bad"]
    assert [m["payload"]["code"] for m in rejected] == ["invalid_command"]
    assert "at $.to.agent_type" in rejected[0]["payload"]["message"]  # the command schema was loaded
    answered = [m["event"] for m in events if m["task_id"] == "T-good"]
    assert answered == ["error", "builder.completed"]  # model_not_configured, then the terminal event
    assert b"Traceback" not in proc.stderr


def test_plan_role_validation_uses_the_packaged_answer_schema(installed: Path, tmp_path: Path) -> None:
    plan = tmp_path / "plan.lua"
    plan.write_text('function run(ctx)\n  return {status = "maybe"}\nend\n')
    proc = _run(installed, "plan", str(plan), "--workspace", str(tmp_path), "--role", "reviewer", cwd=tmp_path)
    assert proc.returncode != 0
    assert b"reviewer answer schema" in proc.stderr


def test_package_data_exists_once_in_git() -> None:
    """agent/data holds only symlinks to the top-level schemas/ and fixtures/demo/: one copy of each file."""
    data = ROOT / "agent" / "data"
    entries = sorted(p.name for p in data.iterdir())
    assert entries == ["demo", "schemas"]
    assert all((data / name).is_symlink() for name in entries)
    assert (data / "schemas").resolve() == (ROOT / "schemas").resolve()
    assert (data / "demo").resolve() == (ROOT / "fixtures" / "demo").resolve()
    # No other file under agent/ duplicates a schema or demo file.
    shipped = {hashlib.sha256(p.read_bytes()).hexdigest(): p for base in ("schemas", "fixtures/demo")
               for p in (ROOT / base).rglob("*") if p.is_file() and p.stat().st_size > 0}
    for path in (ROOT / "agent").rglob("*"):
        if data in path.parents or not path.is_file() or "__pycache__" in path.parts:
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert digest not in shipped, f"{path} duplicates {shipped.get(digest)}"
