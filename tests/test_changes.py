"""The builder's files as changes (destructive rewrites refused), and edits (`tools.edit`) applied exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.edits.changes import (
    ChangeError,
    named_definitions,
    planned_writes,
    shrink_reason,
    where_old_text_is,
)
from agent.errors import AgentError, PathRejected
from agent.project_files import bookkeeping_reason, paths_named_in, project_files
from agent.workspace import Workspace

CLASS = "class Stack:\n" + "".join(f"    def op{i}(self):\n        return {i}\n\n" for i in range(6))
TESTS = "import unittest\n\nclass T(unittest.TestCase):\n    def test_push(self):\n        pass\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "stack.py").write_text(CLASS)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_stack.py").write_text(TESTS)
    (tmp_path / "twice.py").write_text("x = 1\nx = 1\n")
    return Workspace(tmp_path)


def test_old_text_that_is_missing_is_located_by_its_first_line(ws: Workspace) -> None:
    # old's first line is in the file, its body is not: the model is asked again with where to look
    where = where_old_text_is(ws.read_text("stack.py"),
                              "    def op1(self):\n        total = compute_everything(self)\n        return total * 2\n")
    assert "'def op1(self):') is at line 5" in where


def test_a_class_reduced_to_a_stub_is_refused(ws: Workspace) -> None:
    stub = "class Stack:\n    def op0(self):\n        pass\n"  # not merged: a stub never replaces a body
    with pytest.raises(ChangeError) as err:
        planned_writes(ws, {"files": [{"path": "stack.py", "content": stub}]})
    assert "files[0] would replace stack.py (19 lines) with 3 lines" in err.value.message


def test_an_emptied_test_file_is_refused(ws: Workspace) -> None:
    with pytest.raises(ChangeError, match="would remove every test from tests/test_stack.py"):
        planned_writes(ws, {"files": [{"path": "tests/test_stack.py", "content": "import unittest\n"}]})


def test_shrink_rules() -> None:
    many = "".join(f"def f{i}():\n    pass\n" for i in range(4))
    assert shrink_reason("m.py", many, "def f0():\n    pass\ndef g():\n    pass\n" * 3) == \
        "would remove f1, f2, f3 from m.py"
    assert shrink_reason("m.py", "a\nb\n", "") is None  # small files may be rewritten
    assert shrink_reason("m.py", many, many + "def extra():\n    pass\n") is None


def test_a_rewrite_that_loses_a_class_is_refused(ws: Workspace) -> None:
    flat = "".join(f"def op{i}(self):\n    return {i}\n\n" for i in range(6))  # as long, but no class
    [merged] = planned_writes(ws, {"files": [{"path": "stack.py", "content": flat}]})  # only methods: merged
    assert merged.content.startswith("class Stack:") and merged.notes
    flat += "VERSION = 2\n"  # not only definitions: no merge
    with pytest.raises(ChangeError, match="would remove class Stack from stack.py"):
        planned_writes(ws, {"files": [{"path": "stack.py", "content": flat}]})


def test_a_whole_new_file_and_a_full_rewrite_pass(ws: Workspace) -> None:
    writes = planned_writes(ws, {"files": [{"path": "src/new.py", "content": "x = 1\n"},
                                           {"path": "stack.py", "content": CLASS + "# more\n"}]})
    assert [w.path for w in writes] == ["src/new.py", "stack.py"]


@pytest.mark.parametrize("path", ["lorch.json", "lorch-console.log", "events/run.ndjson", "state/x.json",
                                  "receipts/T/a.json", "logs/x", ".git/config", "src/.env", "reviews/T-1.json",
                                  "spec_notes/T-1.json", "./lorch.json"])
def test_bookkeeping_paths_are_refused(ws: Workspace, path: str) -> None:
    with pytest.raises(PathRejected, match="may not write|written only by"):
        planned_writes(ws, {"files": [{"path": path, "content": "x"}]})


def test_escaping_paths_are_refused(ws: Workspace) -> None:
    with pytest.raises(AgentError):
        planned_writes(ws, {"files": [{"path": "../outside.py", "content": "x"}]})


def test_listing_shows_only_the_projects_files(tmp_path: Path) -> None:
    for rel in ("lorch.json", "lorch-console.log", "events/e.ndjson", "state/s.json", "receipts/T/r.json",
                "logs/l.txt", "snapshots/s", "transcripts/t", "reviews/T.json", "spec_notes/T.json", ".hidden",
                "src/app.py", "README.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert project_files(Workspace(tmp_path)) == ["README.md", "src/app.py"]
    assert bookkeeping_reason("src/app.py") is None and "lorch" in str(bookkeeping_reason("lorch.json"))


def test_paths_named_in_a_goal() -> None:
    files = ["src/calc.py", "tests/test_calc.py", "README.md", "a/util.py", "b/util.py"]
    goal = "Fix calc.py (see tests/test_calc.py); util.py is ambiguous; ignore e.g. and v1.2"
    assert paths_named_in([goal], files) == ["src/calc.py", "tests/test_calc.py"]


def test_a_small_file_answered_without_one_of_its_functions_keeps_it(tmp_path: Path) -> None:
    # the 0.5B under real lorch: stats.py answered as median alone, and mean was gone
    (tmp_path / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef median(xs):\n    return 0\n")
    ws = Workspace(tmp_path)
    [write] = planned_writes(ws, {"files": [{"path": "stats.py", "content": "def median(xs):\n    return sorted(xs)[0]\n"}]})
    assert write.content == "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef median(xs):\n    return sorted(xs)[0]\n"
    assert write.notes == ["files[0] held only part of stats.py: kept mean; replaced median"]
    # a rewrite with other statements is the model's to make
    [write] = planned_writes(ws, {"files": [{"path": "stats.py", "content": "X = 1\ndef median(xs):\n    return X\n"}]})
    assert write.content.startswith("X = 1") and write.notes == []


def test_a_change_that_only_moves_docstrings_and_layout_is_seen_as_unchanged_code(tmp_path: Path) -> None:
    from agent.edits.changes import FileWrite, unchanged_code

    src = '"""Temps."""\n\n\ndef f_to_c(f):\n    """Convert."""\n    return f - 32 * 5 / 9\n'
    (tmp_path / "temp.py").write_text(src)
    ws = Workspace(tmp_path)
    same = 'def f_to_c(f):\n    return (f - 32 * 5 / 9)\n'
    assert unchanged_code(ws, [FileWrite("temp.py", same, "files[0]")]) == ["temp.py"]
    fixed = 'def f_to_c(f):\n    return (f - 32) * 5 / 9\n'
    assert unchanged_code(ws, [FileWrite("temp.py", fixed, "files[0]")]) == []
    assert unchanged_code(ws, [FileWrite("temp.py", same, "files[0]"), FileWrite("new.py", "x = 1\n", "files[0]")]) == []
    assert unchanged_code(ws, [FileWrite("temp.py", "def (:\n", "files[0]")]) == []


def test_a_file_answered_with_none_of_its_definitions_is_refused(ws: Workspace) -> None:
    # the 1.5B under real lorch, whole-files form: temperature.py answered with its test file's content
    (Path(str(ws.root)) / "temp.py").write_text("def c_to_f(c):\n    return c * 9 / 5 + 32\n\n\ndef f_to_c(f):\n"
                                                "    return f - 32 * 5 / 9\n")
    tests = "import unittest\n\nfrom temp import c_to_f\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n" \
            "        self.assertEqual(c_to_f(0), 32)\n\n\nif __name__ == '__main__':\n    unittest.main()\n"
    with pytest.raises(ChangeError, match="would replace temp.py with a file that has none of its definitions "
                                          r"\(c_to_f, f_to_c\)"):
        planned_writes(ws, {"files": [{"path": "temp.py", "content": tests}]})


def test_a_named_function_is_quoted_whole_or_says_where_it_was_cut(ws: Workspace) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(30))
    long = "".join(f"    y{i} = {i}\n" for i in range(70))
    (ws.root / "life.py").write_text(f"def tick(m):\n{body}    return m\n\n\ndef big(m):\n{long}    return m\n")
    [tick] = named_definitions(ws, ["life.py"], "tick(")
    assert tick == f"life.py\n```\ndef tick(m):\n{body}    return m\n```"  # 32 lines: whole
    [big] = named_definitions(ws, ["life.py"], "big(")
    assert big.startswith("life.py\n```\ndef big(m):\n    y0 = 0\n") and "    y58 = 58\n" in big
    assert big.endswith("    y58 = 58\n    # … 12 more lines of big …\n```") and "y59" not in big
