from pathlib import Path

import orjson
import pytest
from support import make_command

from agent.pathpolicy import AGENT, for_role
from agent.protocol import Command, schema_errors
from agent.receipts import ReceiptStore, inputs_digest
from agent.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "w").mkdir()
    return Workspace(tmp_path / "w")


def _record(ws: Workspace, cmd: Command) -> str:
    art = ws.write_atomic("reviews/T-0001.json", b'{"status": "approved"}', policy=for_role("reviewer", "T-0001"))
    terminal = {"event": "review.completed", "status": "approved", "payload": {"summary": "ok"}}
    return ReceiptStore(ws).record(cmd, inputs_digest(cmd), ws.digest(), [art], terminal)


def test_recorded_command_is_found_and_valid(ws: Workspace) -> None:
    cmd = Command.from_dict(make_command("review"))
    rel = _record(ws, cmd)
    assert rel == "receipts/T-0001/review-1.json"
    assert not schema_errors("receipt.schema.json", orjson.loads(ws.read_bytes(rel)))
    hit, why = ReceiptStore(ws).lookup(cmd, inputs_digest(cmd), ws.digest())
    assert hit is not None and hit.terminal["status"] == "approved", why


def test_workspace_change_means_a_fresh_run(ws: Workspace) -> None:
    cmd = Command.from_dict(make_command("review"))
    _record(ws, cmd)
    ws.write_atomic("src/app.py", "changed by the builder")
    hit, why = ReceiptStore(ws).lookup(cmd, inputs_digest(cmd), ws.digest())
    assert hit is None and "changed since the recorded command" in why


def test_new_inputs_under_the_same_key_mean_a_fresh_run(ws: Workspace) -> None:
    first = make_command("intake", inputs={"user_instruction": "x"}, key="ik:" + "a" * 64)
    second = make_command("intake", inputs={"user_instruction": "x", "clarifications": [{"q": "a"}]}, key="ik:" + "a" * 64)
    _record(ws, Command.from_dict(first))
    cmd2 = Command.from_dict(second)
    hit, why = ReceiptStore(ws).lookup(cmd2, inputs_digest(cmd2), ws.digest())
    assert hit is None and "inputs changed" in why


def test_tampered_artifact_means_a_fresh_run(ws: Workspace) -> None:
    cmd = Command.from_dict(make_command("review"))
    _record(ws, cmd)
    path = ws.root / "reviews/T-0001.json"
    digest = ws.digest()
    path.write_bytes(b'{"status": "tampered"}')
    hit, why = ReceiptStore(ws).lookup(cmd, inputs_digest(cmd), digest)
    assert hit is None and "no longer matches" in why


def test_numbers_grow_and_lorch_step_files_are_left_alone(ws: Workspace) -> None:
    ws.write_atomic("receipts/T-0001/step-1.json", b"lorch's own", policy=AGENT)
    cmd = Command.from_dict(make_command("review"))
    assert _record(ws, cmd).endswith("review-1.json")
    assert _record(ws, cmd).endswith("review-2.json")
    assert (ws.root / "receipts/T-0001/step-1.json").read_bytes() == b"lorch's own"


def test_hostile_task_id_stays_inside(ws: Workspace, tmp_path: Path) -> None:
    cmd = Command.from_dict(make_command("review", task_id="../../escape"))
    rel = _record(ws, cmd)
    assert rel.startswith("receipts/") and ".." not in rel.split("/")
    assert not (tmp_path / "escape").exists()


def test_builder_rerun_with_identical_files_still_means_a_fresh_review(ws: Workspace) -> None:
    """lorch's review ↔ implement_changes loop must not replay both sides forever."""
    review = Command.from_dict(make_command("review"))
    _record(ws, review)
    store = ReceiptStore(ws)
    assert store.lookup(review, inputs_digest(review), ws.digest())[0] is not None
    changes = Command.from_dict(make_command("implement_changes"))
    store.record(changes, inputs_digest(changes), ws.digest(), [], {"event": "builder.completed", "payload": {}})
    hit, why = store.lookup(review, inputs_digest(review), ws.digest())  # same files, one more builder run
    assert hit is None and "other commands" in why


@pytest.mark.parametrize("forge", ["edit", "drop the mac", "sign with another key"])
def test_a_receipt_the_agent_did_not_write_is_never_replayed(ws: Workspace, forge: str) -> None:
    from agent.receipt_key import ReceiptKey

    cmd = Command.from_dict(make_command("review"))
    rel = _record(ws, cmd)
    data = orjson.loads(ws.read_bytes(rel))
    if forge == "edit":
        data["terminal"]["payload"]["summary"] = "forged"
    elif forge == "drop the mac":
        data.pop("mac")
    else:
        data["mac"] = ReceiptKey(b"k" * 32, None).mac(data)
    (ws.root / rel).write_bytes(orjson.dumps(data))
    store = ReceiptStore(ws)
    hit, why = store.lookup(cmd, inputs_digest(cmd), ws.digest())
    assert hit is None and "fails its authentication check" in why and store.rejected == [rel]


def test_the_key_is_made_once_per_workspace_outside_it(ws: Workspace, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from agent.receipt_key import load_key

    monkeypatch.setenv("LUALLM_AGENT_STATE_DIR", str(tmp_path / "state"))
    first, again = load_key(ws.root), load_key(ws.root)
    assert first.where == again.where and first.where.startswith(str(tmp_path / "state"))
    assert (Path(first.where).stat().st_mode & 0o777) == 0o600
    data = {"a": 1}
    assert again.verify({**data, "mac": first.mac(data)})
    other = tmp_path / "other"
    other.mkdir()
    assert load_key(other).where != first.where
