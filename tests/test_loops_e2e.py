"""End-to-end: lorch's review and spec loops end, through real agent subprocesses.

lorch sends review ↔ implement_changes (and update_spec ↔ implement_changes) without any limit.
These tests drive the loop like lorch does, with a reviewer (spec maintainer) that always asks
for changes; the driver's own cap stands in for "forever": without the agent's bound the loop
would run into it.
"""

from __future__ import annotations

import json
from pathlib import Path

from support import events, fenced, make_command

CALC = '__all__ = ["add"]\n\n\ndef add(a, b):\n    return a + b\n'
FOREVER = 12  # lorch has no limit; this driver gives up here


def builder_answer(round_no: int) -> str:
    # each round changes what the code does (a change of comments alone is no change)
    return fenced(("calc.py", f"{CALC}\n\nROUND = {round_no}\n"), words=f"round {round_no}")


def _recorded(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_review_loop_ends_after_max_rounds_across_a_restart(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text(CALC)
    builder = spawn("builder", replies=[builder_answer(i) for i in range(FOREVER)])
    insist = json.dumps({"status": "changes_requested", "summary": "still not exported",
                         "findings": [{"path": "calc.py", "line": 1, "comment": "export subtract in __all__"}]})
    recording = tmp_path / "reviewer-requests.jsonl"
    reviewer = spawn("reviewer", "--record", str(recording), replies=[insist] * FOREVER)
    assert events(builder.run(make_command("implement")), "builder.completed")
    rounds, last = 0, []
    while rounds < FOREVER:
        last = reviewer.run(make_command("review"))
        rounds += 1
        if events(last, "error"):
            break
        assert events(last, "review.completed")[-1]["status"] == "changes_requested"
        if rounds == 2:  # lorch restarts an agent that died: the count lives on disk
            assert reviewer.close() == 0
            reviewer = spawn("reviewer", replies=[insist] * FOREVER)
        assert events(builder.run(make_command("implement_changes")), "builder.completed")
    assert rounds == 4  # --max-review-rounds default
    err = events(last, "error")[-1]["payload"]
    assert err["code"] == "review_loop_limit" and err["rounds"] == 4 and err["max_rounds"] == 4
    assert "calc.py:1 export subtract in __all__" in err["message"]
    assert not events(last, "review.completed")  # the error is the end; then exit 3 fails lorch's run at once
    assert reviewer.proc.wait(10) == 3
    # From its second round on, the reviewer saw its previous review and what changed since.
    second = _recorded(recording)[1]["request"]["messages"][-1]["content"]
    assert "## Your previous review of this task" in second and "export subtract in __all__" in second
    assert "calc.py: +1 −1 lines" in second and "+ROUND = 1" in second
    assert "round 2 of at most 4" in second


def test_spec_loop_ends_after_max_spec_rounds(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text(CALC)
    (workspace / "SPEC.md").write_text("# Spec\n\n## Behaviour\nadd and subtract\n\n## Status\nadd only\n")
    builder = spawn("builder", replies=[builder_answer(i) for i in range(FOREVER)])
    insist = json.dumps({"status": "changes_requested", "summary": "subtract is missing",
                         "required_changes": ["implement subtract(a, b)"]})
    spec = spawn("spec_maintainer", "--max-spec-rounds", "2", replies=[insist] * FOREVER)
    assert events(builder.run(make_command("implement")), "builder.completed")
    rounds, last = 0, []
    while rounds < FOREVER:
        last = spec.run(make_command("update_spec"))
        rounds += 1
        if events(last, "error"):
            break
        assert events(last, "spec.changes_requested")
        assert events(builder.run(make_command("implement_changes")), "builder.completed")
    assert rounds == 2
    err = events(last, "error")[-1]["payload"]
    assert err["code"] == "spec_loop_limit" and "implement subtract(a, b)" in err["message"]
    assert spec.proc.wait(10) == 3


def test_an_approval_in_the_last_round_ends_the_loop_normally(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "calc.py").write_text(CALC)
    insist = json.dumps({"status": "changes_requested", "summary": "no",
                         "findings": [{"path": "calc.py", "comment": "export subtract"}]})
    approve = json.dumps({"status": "approved", "summary": "yes", "findings": []})
    reviewer = spawn("reviewer", "--max-review-rounds", "2", replies=[insist, approve])
    assert events(reviewer.run(make_command("review")), "review.completed")[-1]["status"] == "changes_requested"
    (workspace / "calc.py").write_text(CALC + "\n\ndef subtract(a, b):\n    return a - b\n")
    done = events(reviewer.run(make_command("review")), "review.completed")[-1]
    assert done["status"] == "approved" and done["payload"]["round"] == 2
    assert reviewer.proc.poll() is None


def test_changes_requested_without_saying_which_takes_the_summary(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-1.5B under real lorch: the same answer without required_changes twice failed the run
    (workspace / "SPEC.md").write_text("# Spec\n\n## Behaviour\nadd\n\n## Status\nnot started\n")
    vague = json.dumps({"status": "changes_requested", "summary": "fizzbuzz(15) must return FizzBuzz"})
    out = spawn("spec_maintainer", replies=[vague]).run(make_command("update_spec"))
    done = events(out, "spec.changes_requested")[-1]["payload"]
    assert done["required_changes"] == ["fizzbuzz(15) must return FizzBuzz"]
