"""The one ignore-aware walk: git's ignore semantics, dot-names and bookkeeping skipped."""

from __future__ import annotations

import os
from pathlib import Path

from agent.walk import IgnoreRules, walk_files


def _make(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_walk_order_and_skips(tmp_path: Path) -> None:
    _make(tmp_path, {"b.txt": "", "a.txt": "", "src/m.py": "", "src/z/y.py": "", ".env": "",
                     ".git/config": "", "receipts/T/x.json": "", "logs/a": "", "events/e": "",
                     "src/.hidden/h": ""})
    assert list(walk_files(str(tmp_path))) == ["a.txt", "b.txt", "src/m.py", "src/z/y.py"]


def test_gitignore_levels_negation_and_directories(tmp_path: Path) -> None:
    _make(tmp_path, {
        ".gitignore": "*.log\nbuild/\n/top-only.txt\nvendor/\n",
        "app.log": "", "keep/app.log": "", "keep/.gitignore": "!app.log\n",
        "build/out.o": "", "src/build/gen.c": "", "top-only.txt": "", "src/top-only.txt": "",
        "vendor/.gitignore": "!*\n", "vendor/lib.c": "",  # nothing inside an ignored dir comes back
        "src/main.c": "",
    })
    got = list(walk_files(str(tmp_path)))
    assert got == ["keep/app.log", "src/main.c", "src/top-only.txt"]


def test_path_ignored_agrees_with_the_walk(tmp_path: Path) -> None:
    _make(tmp_path, {".gitignore": "node_modules/\n*.tmp\n", "node_modules/x/i.js": "", "a.tmp": "", "a.py": ""})
    rules = IgnoreRules(str(tmp_path))
    assert rules.path_ignored("node_modules/x/i.js")
    assert rules.path_ignored("a.tmp")
    assert rules.path_ignored(".git/hooks/pre-commit")
    assert rules.path_ignored("receipts/T/1.json")
    assert not rules.path_ignored("a.py")


def test_links_to_directories_are_not_walked(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(outside, ws / "escape")
    os.symlink(outside / "secret.txt", ws / "file_link")
    (ws / "own.txt").write_text("o")
    assert list(walk_files(str(ws))) == ["file_link", "own.txt"]


def test_lorch_files_at_the_root_are_not_project_files(tmp_path: Path) -> None:
    _make(tmp_path, {"lorch.json": "{}", "lorch-console.log": "x", "src/lorch.json": "{}"})
    assert list(walk_files(str(tmp_path))) == ["src/lorch.json"]


def test_listing_folds_big_directories_and_keeps_the_budget() -> None:
    from agent.walk import summarize_listing

    files = ["README.md", "setup.py"] + [f"src/m{i}.py" for i in range(5)] + \
        [f"vendor/lib{i}/f{j}.c" for i in range(30) for j in range(10)]
    got = summarize_listing(files, 20)
    assert len(got) <= 20
    assert got[:2] == ["README.md", "setup.py"]
    assert all(f"src/m{i}.py" in got for i in range(5)), "small directories are unfolded first"
    assert "vendor/ (300 files)" in got
    assert summarize_listing(files[:5], 20) == files[:5]
    tiny = summarize_listing(files, 3)
    assert len(tiny) == 3 and tiny[-1].startswith("... and ")
