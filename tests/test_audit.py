import json
import stat
from pathlib import Path

from agent.audit import AuditLog
from agent.redact import MASK, Redactor


def test_audit_lines_are_redacted_private_and_rotated(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "luallm-agent" / "audit.jsonl"
    log = AuditLog(path, Redactor(environ={"X_TOKEN": "tok-123456789"}), max_bytes=400, keep=2, stderr=False)
    for i in range(20):
        log.record("step", i=i, note="tok-123456789", api_key="k")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert path.stat().st_size <= 400
    rotated = sorted(p.name for p in path.parent.iterdir())
    assert rotated == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["i"] == 19 and last["note"] == MASK and last["api_key"] == MASK
    assert all("tok-123456789" not in p.read_text() for p in path.parent.iterdir())


def test_a_planted_symlink_never_redirects_the_audit_log(tmp_path: Path) -> None:
    # A test command (arbitrary code in the workspace) could leave `logs` or the log file itself
    # as a link out; the agent's own appends and rotations must not follow it.
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "bashrc").write_text("untouched\n")
    (root / "logs").symlink_to(outside)
    log = AuditLog(root / "logs" / "luallm-agent" / "audit.jsonl", Redactor(environ={}), stderr=False, anchor=root)
    log.record("step")
    assert sorted(p.name for p in outside.iterdir()) == ["bashrc"]
    (root / "logs").unlink()
    (root / "logs" / "luallm-agent").mkdir(parents=True)
    (root / "logs" / "luallm-agent" / "audit.jsonl").symlink_to(outside / "bashrc")
    small = AuditLog(root / "logs" / "luallm-agent" / "audit.jsonl", Redactor(environ={}), stderr=False, anchor=root,
                     max_bytes=10)
    for _ in range(3):
        small.record("step")
    assert (outside / "bashrc").read_text() == "untouched\n"


def test_exception_entries_are_bounded_whatever_the_message(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl", Redactor(environ={}), stderr=False, anchor=tmp_path)
    try:
        raise ValueError("m" * 5_000_000)
    except ValueError as exc:
        log.exception("internal_error", exc)
    line = (tmp_path / "audit.jsonl").read_bytes()
    assert len(line) < 30_000 and b"truncated" in line
