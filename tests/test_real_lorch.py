"""The real lorch orchestrator drives this agent through whole `lorch run --task` runs.

The lorch binary is built from its public source (GitHub iambrandonn/lorch, see
../shared/tools/build_lorch.sh); found via $LUALLM_LORCH_BIN, /work/lorch-bin/lorch or PATH, and
these tests skip with the reason when it is absent. The model is scripted (`--scripted-replies`),
so what is proven is protocol interop over a full run: lorch's own decoder accepts every line,
its scheduler sees the terminal events it waits for, the review loop turns, the run ends with
lorch's success, and the code in the workspace really works (the task's behavioural check).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lorch_support import harness

LORCH_MISSING = harness.lorch_unavailable_reason()
pytestmark = pytest.mark.skipif(LORCH_MISSING is not None, reason=f"real lorch unavailable: {LORCH_MISSING}")
WALL_CAP = 120.0


def _task(name: str) -> Any:
    return harness.load_tasks([name])[0]


def _lorch_commands(ws: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted((ws / "events").glob("*.ndjson")):
        for line in path.read_text().splitlines():
            msg = json.loads(line) if line.strip() else None
            if isinstance(msg, dict) and msg.get("kind") == "command":
                rows.append(msg)
    return rows


def test_a_review_loop_under_real_lorch_ends_in_success(tmp_path: Path) -> None:
    """implement (incomplete) → review: changes requested → implement_changes → review: approved → update_spec."""
    task = _task("feature-cart")
    solution = (task.solution / "cart.py").read_text()
    # First answer: remove() without the KeyError for a missing item (the check would fail on it).
    partial = solution.replace("        if name not in self.items:\n            raise KeyError(name)\n",
                               "        if name not in self.items:\n            return\n")
    assert partial != solution
    line = partial.splitlines().index("        if name not in self.items:") + 1
    replies = {
        "builder": [f"Added Cart.remove.\n\ncart.py\n```python\n{partial}```\n",
                    f"remove raises KeyError for a missing item.\n\ncart.py\n```python\n{solution}```\n"],
        "reviewer": [json.dumps({"status": "changes_requested", "summary": "missing items must raise KeyError",
                                 "findings": [{"path": "cart.py", "line": line,
                                               "comment": "raise KeyError when the item is not in the cart"}]}),
                     json.dumps({"status": "approved", "summary": "remove does what the goal asks", "findings": []})],
        "spec_maintainer": [json.dumps({"status": "updated", "summary": "remove is done", "section_edits": [
            {"section": "Status", "content": "`add`, `total` and `remove` are done and tested."}]})],
    }
    spec = harness.RunSpec("scripted", scripted=True, replies=replies)
    r = harness.run_task(task, spec, tmp_path / "run", lorch=harness.find_lorch(), wall_cap=WALL_CAP)
    log = Path(r["lorch_log"]).read_text()
    assert r["lorch_ok"], f"lorch failed: {r['lorch_error']}\n{log[-3000:]}"
    assert r["lorch_exit"] == 0 and not r["timed_out"]
    assert r["lorch_decode_errors"] == 0, "lorch could not decode a line from the agent"
    assert r["check_failed_before"] and r["check_passed"], r["check_summary"]
    assert r["success"]
    ws = Path(r["workspace"])
    assert [c["action"] for c in _lorch_commands(ws)] == ["implement", "review", "implement_changes", "review",
                                                           "update_spec"]
    assert r["events"] == ["builder.completed/success", "review.completed/changes_requested",
                           "builder.completed/success", "review.completed/approved", "spec.updated"]
    assert r["builder_tests"] == ["pass", "pass"]
    review = json.loads((ws / "reviews" / "T-001.json").read_text())
    assert review["status"] == "approved"
    assert "`remove` are done" in (ws / "SPEC.md").read_text()
    assert r["command_failures"] == [] and r["error_codes"] == []


@pytest.mark.slow
@pytest.mark.parametrize("name", [t.name for t in harness.load_tasks()])
def test_every_task_completes_under_real_lorch_with_its_reference_solution(name: str, tmp_path: Path) -> None:
    task = _task(name)
    r = harness.run_task(task, harness.RunSpec("scripted", scripted=True), tmp_path / "run",
                         lorch=harness.find_lorch(), wall_cap=WALL_CAP)
    assert r["success"], (r["lorch_error"], r["check_summary"])
    assert r["check_failed_before"]
    assert r["commands_by_action"] == {"implement": 1, "review": 1, "update_spec": 1}
    assert r["lorch_decode_errors"] == 0
