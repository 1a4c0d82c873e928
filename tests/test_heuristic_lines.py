"""The heuristic-code count reads the code as it is: a gate added is counted, the parts add up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lorch_support import load_bench

ROOT = Path(__file__).resolve().parent.parent


def test_the_count_adds_up_and_names_every_listed_module() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "bench/heuristic_lines.py"), "--json"], capture_output=True,
                         text=True, check=True)
    figures = json.loads(out.stdout)
    parts = ("strategies", "modules", "unswitched")
    assert figures["heuristic_lines"] == sum(sum(figures[part].values()) for part in parts)
    assert figures["heuristic_raw_lines"] == sum(figures["heuristic_raw_by_part"][part] for part in parts)
    assert set(figures["modules"]) == set(load_bench("heuristic_lines.py").MODULES)
    assert set(figures["unswitched"]) == set(load_bench("heuristic_lines.py").UNSWITCHED)
    assert 0 < figures["heuristic_lines"] < figures["agent_code_lines"]
    # raw lines hold the code lines and the docstrings, comments and blank lines around them
    assert figures["heuristic_lines"] < figures["heuristic_raw_lines"] < figures["agent_raw_lines"]
    assert figures["agent_code_lines"] < figures["agent_raw_lines"]


def _gated_lines(tmp_path: Path, source: str) -> dict[str, set[int]]:
    """The counter's lines per strategy in a module of `source`."""
    path = tmp_path / "m.py"
    path.write_text(source)
    return load_bench("heuristic_lines.py").strategy_lines(path)


def test_a_gate_counts_its_statement_and_a_function_that_exits_when_off_counts_whole(tmp_path: Path) -> None:
    lines = _gated_lines(tmp_path, 'def f(ctx):\n    """Doc."""\n    if not enabled(ctx, "fresh_attempt"):\n'
                                   '        return 1\n    x = 2\n    return x\n\n\ndef g(ctx):\n    y = 1\n'
                                   '    if enabled(ctx, "keep_cut_reply"):\n        y = 2\n    return y\n')
    assert lines == {"fresh_attempt": set(range(1, 7)), "keep_cut_reply": {11, 12}}


def test_each_gated_statement_counts_under_its_own_name_and_a_helper_only_it_uses_counts_whole(tmp_path: Path) -> None:
    h = load_bench("heuristic_lines.py")
    import ast
    src = ('def f(ctx):\n    for x in ctx:\n        if enabled(ctx, "fresh_attempt"):\n            _only(x)\n'
           '        if enabled(ctx, "keep_cut_reply"):\n            _shared(x)\n    _shared(1)\n\n\n'
           'def _only(x):\n    return x\n\n\ndef _shared(x):\n    return x\n')
    path = tmp_path / "m.py"
    path.write_text(src)
    lines = h.strategy_lines(path)
    assert lines == {"fresh_attempt": {3, 4}, "keep_cut_reply": {5, 6}}
    owned = {"m.py": {line: name for name, ls in lines.items() for line in ls}}
    h.helper_lines({"m.py": ast.parse(src)}, owned)
    assert {line for line, name in owned["m.py"].items() if name == "fresh_attempt"} == {3, 4, 10, 11}
    assert 14 not in owned["m.py"]  # `_shared` is used outside the gates too


def test_a_gate_kept_in_a_name_counts_where_the_name_is_tested(tmp_path: Path) -> None:
    lines = _gated_lines(tmp_path, 'def f(ctx, edits):\n    mend = enabled(ctx, "mend_spec_answer")\n    x = 1\n'
                                   '    if mend and edits:\n        # wrapped\n        x = 2\n'
                                   '    merged = g(x) if mend else None\n    if merged is not None:\n        x = merged\n'
                                   '    return x\n')
    # rule 1: `mend` holds the switch, `merged` a value it chose; both count where they are tested
    assert lines == {"mend_spec_answer": {2, 4, 5, 6, 7, 8, 9}}


def test_a_switch_passed_to_a_function_of_agent_counts_in_it_and_a_chosen_value_is_not_followed(
        tmp_path: Path) -> None:
    h = load_bench("heuristic_lines.py")
    import ast
    src = ('def caller(ctx, ws, files):\n    out = []\n    for f in files:\n'
           '        out += write(ws, f, merge=enabled(ctx, "merge_partial_file"))\n    return out\n\n\n'
           'def write(ws, f, *, merge=True):\n    text = f\n    if merge:\n        text = text + "!"\n    return text\n\n\n'
           'def once(ctx, stuck, everything):\n    fresh = stuck and enabled(ctx, "fresh_attempt")\n'
           '    shown = [] if fresh else everything\n    return prompt(ctx, fresh, shown)\n\n\n'
           'def prompt(ctx, fresh, shown):\n    if fresh:\n        ctx.reset()\n    if shown:\n        ctx.show(shown)\n'
           '    return ctx\n')
    path = tmp_path / "m.py"
    path.write_text(src)
    passed = h.passed_gates({"m.py": ast.parse(src)})
    assert {line: {p: n for p, n in params.items() if n} for line, params in passed["m.py"].items()} == {
        8: {"merge": {"merge_partial_file"}}, 21: {"fresh": {"fresh_attempt"}}}  # by keyword, by position
    callees = frozenset({"caller", "write", "once", "prompt"})
    # the call that passes the switch counts in the callee, not at the call; `shown`, a value the
    # switch chose, is data to `prompt`
    assert h.strategy_lines(path, passed["m.py"], callees) == {"merge_partial_file": {10, 11},
                                                               "fresh_attempt": {16, 17, 22, 23}}


def test_every_unswitched_piece_is_in_the_code() -> None:
    """The table stays true: an entry whose definition is gone (or renamed) fails here, not silently at 0."""
    import ast
    h = load_bench("heuristic_lines.py")
    trees = {rel: ast.parse((ROOT / rel).read_text()) for rel in {p.partition(":")[0] for p in h.UNSWITCHED}
             if (ROOT / rel).is_file()}
    assert [piece for piece, lines in h.unswitched_lines(trees).items() if not lines] == []
