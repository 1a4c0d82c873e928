"""Fixtures for the OS-boundary tests: force a boundary mode, a workspace with a way out, secrets."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sandbox_support import KEY, SECRET

from agent.sandbox import detect


@pytest.fixture
def use_mode(monkeypatch: pytest.MonkeyPatch) -> Callable[..., detect.Boundary]:
    """use_mode(mode, unsandboxed=False): force the boundary for this test (skip when unavailable)."""

    def _use(mode: str, unsandboxed: bool = False) -> detect.Boundary:
        monkeypatch.setattr(detect, "_overrides", {"mode": mode, "unsandboxed": unsandboxed})
        monkeypatch.setattr(detect, "_boundary", None)
        b = detect.current()
        if b.mode != mode:
            pytest.skip(f"boundary {mode} is not available on this machine: {b.reason}")
        return b

    return _use


@dataclass
class Scene:
    """A workspace with a symlink out of it, a secret outside, and a $HOME holding an SSH key."""

    root: Path
    ws: Path
    outside: Path
    home: Path

    @property
    def key(self) -> Path:
        return self.home / ".ssh" / "id_rsa"


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scene:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (ws / "linkdir").symlink_to(outside)
    (ws / "notes.txt").write_text("inside\n")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY + "\n")
    monkeypatch.setenv("HOME", str(home))
    return Scene(tmp_path, ws, outside, home)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process outside every sandbox, like the agent: a secret in its environment, non-dumpable
    (as `luallm-agent stdio` makes itself), waiting to be signalled or read."""
    code = ("from agent.sandbox.confine import make_undumpable; make_undumpable(); import sys, time; "
            "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            env={**os.environ, "OPENAI_API_KEY": "sk-agent-secret-9931"})
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    yield proc
    proc.kill()
    proc.wait()
