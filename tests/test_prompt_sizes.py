"""Every role's first prompt fits a small model: fixed part ≤ 4k tokens, whole ≤ 6k of an 8k context."""

import json
import subprocess
import sys

from support import ROOT

from agent.protocol import ROLE_ACTIONS


def test_first_prompts_fit_an_8k_context_with_room_to_answer() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "prompt_sizes.py"), "--json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout)
    measured = {(r["role"], r["action"], r["form"]) for r in rows}
    expected = {(role, action, form) for role, actions in ROLE_ACTIONS.items() for action in actions
                for form in (("text",) if role == "builder" else ("json", "plan", "grammar"))}
    assert measured == expected
    for r in rows:
        assert r["fixed_est_tokens"] <= 4000, r
        assert max(r["whole_est_tokens"], r["whole_est_tokens_3_5"]) <= 6000, r
    # The JSON form leaves out the tool list: its fixed part is the smallest.
    by_key = {(r["role"], r["action"], r["form"]): r for r in rows}
    for role, actions in ROLE_ACTIONS.items():
        for action in actions if role != "builder" else ():
            assert by_key[(role, action, "json")]["fixed_chars"] < by_key[(role, action, "plan")]["fixed_chars"]
