"""One path policy behind every door: each door × each protected-path trick is refused.

Doors: a builder answer's `files[].path` (the check that sends it back, and the write), plan tools
(write / create / edit / read / list / glob), an intake's `expected_outputs`, and command
arguments. Tricks: bookkeeping dirs, dot-paths, `..` and `./` spellings, an absolute path, a
symlink into `receipts/`, another role's feedback file, an over-long name.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.errors import AgentError, PathRejected
from agent.pathpolicy import AGENT, MODEL, PathPolicy, for_role
from agent.plans import PlanLimits
from agent.plans.tools import ToolBox
from agent.workspace import Workspace

ORIGINAL = b"original"
EXISTING = ["receipts/T-1/implement-1.json", "logs/luallm-agent/audit.jsonl", "events/e.json", "state/run.json",
            "snapshots/s.json", "transcripts/t.json", ".git/hooks/pre-commit", ".git/config", ".env",
            "src/.npmrc", "reviews/T-1.json", "spec_notes/T-1.json", "PLAN.md", "SPEC.md", "src/ok.py"]

# (trick, the file it must leave untouched)
READ_AND_WRITE_TRICKS = [
    ("receipts/T-1/implement-1.json", "receipts/T-1/implement-1.json"),
    ("src/../receipts/T-1/implement-1.json", "receipts/T-1/implement-1.json"),
    ("./receipts/T-1/implement-1.json", "receipts/T-1/implement-1.json"),
    ("{root}/receipts/T-1/implement-1.json", "receipts/T-1/implement-1.json"),
    ("to_receipts/implement-1.json", "receipts/T-1/implement-1.json"),     # a symlink into receipts/
    ("logs/luallm-agent/audit.jsonl", "logs/luallm-agent/audit.jsonl"),
    ("events/e.json", "events/e.json"),
    ("state/run.json", "state/run.json"),
    ("snapshots/s.json", "snapshots/s.json"),
    ("transcripts/t.json", "transcripts/t.json"),
    (".git/hooks/pre-commit", ".git/hooks/pre-commit"),
    ("./.env", ".env"),
    ("src/../.git/config", ".git/config"),
    ("src/.npmrc", "src/.npmrc"),
    ("a" * 300 + "/x.py", None),
]
WRITE_ONLY_TRICKS = [("reviews/T-1.json", "reviews/T-1.json"), ("src/../spec_notes/T-1.json", "spec_notes/T-1.json")]
WRITE_TRICKS = READ_AND_WRITE_TRICKS + WRITE_ONLY_TRICKS


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    for rel in EXISTING:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(ORIGINAL)
    (root / "to_receipts").symlink_to(root / "receipts" / "T-1")
    return Workspace(root)


def _box(ws: Workspace) -> ToolBox:
    class Bridge:
        def call_llm(self, prompt: str, opts: dict[str, Any]) -> str:
            return ""

        def progress(self, message: str) -> None: ...
        def log(self, message: str) -> None: ...

        def run_command(self, cmd: str, timeout_s: float) -> dict[str, Any]:
            # What the agent does for a plan's tools.run (agent.plans.runner): inside the OS sandbox.
            from agent.plans.commands import run_for_plan

            return run_for_plan(cmd, root=str(ws.root), allow=PlanLimits().run_allow, timeout_s=timeout_s)

    return ToolBox(ws, PlanLimits(), Bridge(), deadline=time.monotonic() + 30)


def _refused(result: Any, code: str = "path_rejected") -> bool:
    return isinstance(result, dict) and result.get("code") == code


def _raises_path_rejected(fn: Callable[[], Any]) -> bool:
    try:
        fn()
    except PathRejected:
        return True
    return False


WRITE_DOORS: dict[str, Callable[[Workspace, str], bool]] = {
    "builder answer (check)": lambda ws, p: _raises_path_rejected(lambda: ws.check_write(p, "forged", policy=MODEL)),
    "builder answer (write)": lambda ws, p: _raises_path_rejected(lambda: ws.write_atomic(p, "forged", policy=MODEL)),
    "tools.write": lambda ws, p: _refused(_box(ws).call("write", [p.encode(), b"forged"])),
    "tools.create": lambda ws, p: _refused(_box(ws).call("create", [p.encode(), b"forged"])),
    "tools.edit": lambda ws, p: _refused(_box(ws).call("edit", [p.encode(), b"original", b"forged"])),
    "intake expected_outputs": lambda ws, p: _raises_path_rejected(
        lambda: ws.write_atomic(p, "forged", policy=for_role("orchestration", "T-1").denying("PLAN.md", "SPEC.md"))),
    "command argument (sort -o)": lambda ws, p: _refused(_box(ws).call("run", [f"sort -o {p} src/ok.py".encode()]),
                                                         "command_rejected"),
}
READ_DOORS: dict[str, Callable[[Workspace, str], bool]] = {
    "tools.read": lambda ws, p: _refused(_box(ws).call("read", [p.encode()])),
    "command argument (cat)": lambda ws, p: _refused(_box(ws).call("run", [f"cat {p}".encode()]), "command_rejected"),
}


def _untouched(ws: Workspace, original: str | None) -> None:
    if original is not None:
        assert (ws.root / original).read_bytes() == ORIGINAL
    assert not list(ws.root.rglob(".*.tmp.*"))


@pytest.mark.parametrize("door", list(WRITE_DOORS))
@pytest.mark.parametrize("trick,original", WRITE_TRICKS, ids=[t[0][:40] for t in WRITE_TRICKS])
def test_every_write_door_refuses_every_protected_path(ws: Workspace, door: str, trick: str,
                                                       original: str | None) -> None:
    path = trick.format(root=ws.root)
    if door.startswith("command") and original is None:
        pytest.skip("a name that does not exist is no path argument for the command check")
    assert WRITE_DOORS[door](ws, path), f"{door} accepted {path}"
    _untouched(ws, original)


@pytest.mark.parametrize("door", list(READ_DOORS))
@pytest.mark.parametrize("trick,original", READ_AND_WRITE_TRICKS, ids=[t[0][:40] for t in READ_AND_WRITE_TRICKS])
def test_every_model_facing_read_door_refuses_every_protected_path(ws: Workspace, door: str, trick: str,
                                                                   original: str | None) -> None:
    path = trick.format(root=ws.root)
    if door.startswith("command") and original is None:
        pytest.skip("a name that does not exist is no path argument for the command check")
    assert READ_DOORS[door](ws, path), f"{door} accepted {path}"


@pytest.mark.parametrize("directory", ["receipts", "./receipts/T-1", "src/../.git", ".git/hooks", "to_receipts",
                                       "logs/luallm-agent", "{root}/state", "transcripts"])
def test_list_and_glob_refuse_protected_directories(ws: Workspace, directory: str) -> None:
    path = directory.format(root=ws.root).encode()
    assert _refused(_box(ws).call("list", [path]))
    assert _refused(_box(ws).call("glob", [b"*", {"path": path}]))


def test_glob_and_grep_never_see_protected_files(ws: Workspace) -> None:
    box = _box(ws)
    assert box.call("glob", [b"**"]) == ["PLAN.md", "SPEC.md", "reviews/T-1.json", "spec_notes/T-1.json", "src/ok.py"]
    assert all(hit["path"] in {"PLAN.md", "SPEC.md", "reviews/T-1.json", "spec_notes/T-1.json", "src/ok.py"}
               for hit in box.call("grep", [b"original"]))


def test_ordinary_paths_pass_every_door(ws: Workspace) -> None:
    box = _box(ws)
    assert box.call("write", [b"src/../src/new.py", b"x"])["path"] == "src/new.py"
    assert box.call("edit", [b"./src/ok.py", b"original", b"changed"])["replacements"] == 1
    assert box.call("read", [b"reviews/T-1.json"]) == ORIGINAL  # feedback files are readable
    assert box.call("run", [b"cat src/ok.py"])["stdout"] == "changed"
    assert ws.write_atomic(f"{ws.root}/docs/a.md", "x").path == "docs/a.md"


# -- the narrow exceptions ---------------------------------------------------------------------
@pytest.mark.parametrize("policy,allowed,refused", [
    (for_role("reviewer", "T-1"), ["reviews/T-1.json", "./reviews/T-1.json"],
     ["reviews/T-2.json", "reviews/T-1.json.bak", "spec_notes/T-1.json", "receipts/T-1/x.json", ".git/config"]),
    (for_role("spec_maintainer", "T-1").allowing("SPEC.md"), ["spec_notes/T-1.json", "SPEC.md"],
     ["spec_notes/T-2.json", "reviews/T-1.json", ".env"]),
    (for_role("orchestration", "T-1").denying("PLAN.md", "SPEC.md"), ["planning/proposal.json"],
     ["PLAN.md", "./PLAN.md", "docs/../PLAN.md", "plan.md", "SPEC.md", "reviews/T-1.json", ".lorch/x.json"]),
    (AGENT, ["receipts/T-1/.index/k.json", "logs/luallm-agent/spill/m.json"],
     ["logs/other.log", "events/e.json", ".git/config", "logs/luallm-agent/../../.env"]),
    (MODEL, ["src/app.py", "docs/notes.md"], ["receipts/x.json", "reviews/T-1.json", "spec_notes/T-1.json"]),
])
def test_role_exceptions_are_exact(ws: Workspace, policy: PathPolicy, allowed: list[str], refused: list[str]) -> None:
    for path in allowed:
        assert ws.write_atomic(path, "ok", policy=policy).path == ws.normalize(path)
    for path in refused:
        with pytest.raises(PathRejected) as exc:
            ws.write_atomic(path, "forged", policy=policy)
        assert "is protected" in exc.value.message, path
    assert (ws.root / "PLAN.md").read_bytes() == ORIGINAL and (ws.root / ".env").read_bytes() == ORIGINAL


def test_the_agents_own_reads_see_every_file_but_follow_no_link(ws: Workspace) -> None:
    assert ws.read_bytes("receipts/T-1/implement-1.json") == ORIGINAL  # AGENT is the default for reads
    with pytest.raises(PathRejected):
        ws.read_bytes("receipts/T-1/implement-1.json", policy=MODEL)
    with pytest.raises(AgentError):
        ws.read_bytes("to_receipts/implement-1.json")


def test_prompts_never_quote_protected_task_files(ws: Workspace) -> None:
    # Task files come from an intake's answer: a model could name `.env` to have it sent to itself.
    from types import SimpleNamespace

    from agent.prompt import PromptBuilder
    from agent.roles.prompting import quote_files

    (ws.root / ".env").write_text("API_TOKEN=from-the-dot-env")
    ctx: Any = SimpleNamespace(workspace=ws)
    text = quote_files(ctx, PromptBuilder(), [".env", "./.env", "receipts/T-1/implement-1.json",
                                              "to_receipts/implement-1.json", "src/ok.py"])
    assert "from-the-dot-env" not in text and "src/ok.py" in text
    assert text.count(ORIGINAL.decode()) == 1  # only src/ok.py
