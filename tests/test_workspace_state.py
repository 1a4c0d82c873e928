"""The incremental workspace digest is exact: every change to a walked file changes it, changes to
ignored or bookkeeping files do not, and it always equals a from-scratch digest."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from agent.workspace_state import DigestState


def _fresh(root: Path) -> str:
    state = DigestState(str(root), watch=False)
    return state.digest()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "README.md").write_text("hello\n")
    (root / "receipts").mkdir()
    (root / "receipts" / "r.json").write_text("{}")
    return root


@pytest.fixture(params=[True, False], ids=["inotify", "stat-walk"])
def state(request: pytest.FixtureRequest, tree: Path) -> DigestState:
    s = DigestState(str(tree), watch=request.param)
    s.digest()
    yield s
    s.close()


def _changes(state: DigestState, mutate) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    before = state.digest()
    mutate()
    after = state.digest()
    return before, after


def test_edit_in_place_keeping_size_and_mtime_changes_the_digest(state: DigestState, tree: Path) -> None:
    f = tree / "src" / "pkg" / "mod.py"
    st = f.stat()

    def mutate() -> None:
        with open(f, "r+b") as fh:
            fh.write(b"y")
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns

    before, after = _changes(state, mutate)
    assert before != after and after == _fresh(tree)


@pytest.mark.parametrize("op", ["rename", "delete", "new_file_in_new_dir", "symlink", "dir_rename", "dir_link"])
def test_structural_changes_change_the_digest(state: DigestState, tree: Path, op: str) -> None:
    def mutate() -> None:
        if op == "rename":
            (tree / "README.md").rename(tree / "README.txt")
        elif op == "delete":
            (tree / "README.md").unlink()
        elif op == "new_file_in_new_dir":
            (tree / "a" / "b").mkdir(parents=True)
            (tree / "a" / "b" / "c.txt").write_text("new")
        elif op == "symlink":
            os.symlink("README.md", tree / "link.md")
        elif op == "dir_rename":
            (tree / "src").rename(tree / "lib")
        elif op == "dir_link":  # not walked, so only the new file counts
            os.symlink("src", tree / "src_link")
            (tree / "new.txt").write_text("n")

    before, after = _changes(state, mutate)
    assert before != after and after == _fresh(tree)


def test_change_by_another_process_while_idle(state: DigestState, tree: Path) -> None:
    before = state.digest()
    subprocess.run([sys.executable, "-c", f"open({str(tree / 'src' / 'pkg' / 'mod.py')!r}, 'a').write('z')"],
                   check=True)
    after = state.digest()
    assert before != after and after == _fresh(tree)


def test_bookkeeping_and_dot_files_do_not_change_it(state: DigestState, tree: Path) -> None:
    before = state.digest()
    (tree / "receipts" / "r.json").write_text('{"x": 1}')
    (tree / ".env").write_text("A=1")
    (tree / "logs").mkdir()
    (tree / "logs" / "audit.jsonl").write_text("{}\n")
    assert state.digest() == before


def test_gitignore_rules_with_git_semantics(state: DigestState, tree: Path) -> None:
    before = state.digest()
    (tree / "node_modules" / "dep").mkdir(parents=True)
    (tree / "node_modules" / "dep" / "index.js").write_text("module.exports = 1")
    (tree / "debug.log").write_text("noise")
    with_junk = state.digest()
    assert with_junk != before  # nothing is ignored yet
    (tree / ".gitignore").write_text("node_modules/\n*.log\n!keep.log\n")
    assert state.digest() == before == _fresh(tree)
    (tree / "keep.log").write_text("kept")  # re-included by the negation
    assert state.digest() != before
    # A nested .gitignore overrides its parent for its own subtree.
    (tree / "src" / ".gitignore").write_text("*.py\n")
    state.digest()
    assert "src/pkg/mod.py" not in state.entries
    assert state.digest() == _fresh(tree)
    (tree / "node_modules" / "dep" / "index.js").write_text("changed but ignored")
    d = state.digest()
    assert d == state.digest() == _fresh(tree)


def test_luallmignore_and_git_info_exclude(tree: Path) -> None:
    (tree / "big").mkdir()
    (tree / "big" / "data.bin").write_bytes(b"x" * 10)
    full = _fresh(tree)
    (tree / ".luallmignore").write_text("big/\n")
    assert _fresh(tree) != full
    (tree / ".luallmignore").unlink()
    (tree / ".git" / "info").mkdir(parents=True)
    (tree / ".git" / "info" / "exclude").write_text("big/\n")
    s = DigestState(str(tree))
    assert "big/data.bin" not in (s.digest() and s.entries)
    (tree / ".git" / "info" / "exclude").write_text("# nothing\n")
    s.digest()
    assert "big/data.bin" in s.entries
    s.close()


def test_unchanged_workspace_is_not_walked_again(tree: Path) -> None:
    s = DigestState(str(tree))
    first = s.digest()
    for _ in range(50):
        assert s.digest() == first
    (tree / "README.md").write_text("changed\n")
    assert s.digest() != first
    assert s.full_scans == 1, "changes must be applied from inotify events, not by walking again"
    s.close()


def test_random_operations_always_match_a_fresh_digest(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    rng = random.Random(7)
    s = DigestState(str(root))
    s.digest()
    names = [f"d{i}/f{j}.txt" for i in range(4) for j in range(4)] + ["top.txt", "d0/sub/x.txt"]
    for step in range(200):
        rel = rng.choice(names)
        path = root / rel
        action = rng.random()
        if action < 0.5:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(str(rng.random()))
        elif action < 0.7 and path.exists():
            path.unlink()
        elif action < 0.8 and path.parent.exists() and path.parent != root:
            target = root / f"moved{step}"
            path.parent.rename(target)
        elif action < 0.9:
            (root / ".gitignore").write_text(rng.choice(["", "d1/\n", "*.txt\n!top.txt\n", "sub/\n"]))
        if step % 5 == 0:
            assert s.digest() == _fresh(root), f"diverged at step {step}"
    assert s.digest() == _fresh(root)
    s.close()
