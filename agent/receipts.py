"""Receipts: the record of each completed command, and replay from it.

Layout (inside the workspace): `receipts/<task>/<action>-<n>.json`, one file per completed command,
plus `receipts/<task>/.index/<key-hash>.json` listing the receipts recorded under one idempotency
key, so lookup reads one small file however many receipts a task holds. lorch's own
`receipts/<task>/step-<n>.json` files are never read or written.

A receipt answers a command only when it carries the agent's MAC (`agent.receipt_key`: a receipt
written or edited by anything else is never replayed), the idempotency key, the digest of inputs +
expected_outputs and the digest of the workspace state all match, and every artifact still
matches its checksum: lorch reuses keys across review loops and intake clarification rounds.
The index only points at candidates; what is checked is the receipt's own signed content.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from agent import __version__
from agent.clock import utc_now
from agent.errors import AgentError
from agent.pathpolicy import AGENT
from agent.protocol import Command
from agent.receipt_key import ReceiptKey, load_key
from agent.workspace import Artifact, Workspace, sanitize_id

__all__ = ["Receipt", "ReceiptStore", "inputs_digest", "RECEIPT_FORMAT"]

RECEIPT_FORMAT = "luallm-agent/receipt/v1"
_ACTIONS = ("implement", "implement_changes", "review", "update_spec", "intake", "task_discovery")


def inputs_digest(cmd: Command) -> str:
    """Digest of what the command asks for: canonical inputs + expected_outputs."""
    canon = orjson.dumps({"inputs": cmd.inputs, "expected_outputs": cmd.raw.get("expected_outputs", [])},
                         option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(canon).hexdigest()


@dataclass
class Receipt:
    path: str
    data: dict[str, Any]

    @property
    def artifacts(self) -> list[Artifact]:
        return [Artifact(a["path"], a["sha256"], a["size"]) for a in self.data["artifacts"]]

    @property
    def terminal(self) -> dict[str, Any]:
        return self.data["terminal"]  # type: ignore[no-any-return]


class ReceiptStore:
    """Reads and writes receipts through the workspace's safe, atomic file operations."""

    def __init__(self, workspace: Workspace, key: ReceiptKey | None = None) -> None:
        self.ws = workspace
        self._key = key
        self.rejected: list[str] = []  # receipts that failed the check, for the caller to report

    @property
    def key(self) -> ReceiptKey:
        """Read on first use: a store made only to count rounds (`completed`) never touches the key file."""
        if self._key is None:
            self._key = load_key(self.ws.root)
        return self._key

    def _task_dir(self, task_id: str) -> str:
        return f"receipts/{sanitize_id(task_id)}"

    def _index_path(self, task_id: str, key: str) -> str:
        h = hashlib.sha256(key.encode()).hexdigest()[:40]
        return f"{self._task_dir(task_id)}/.index/{h}.json"

    def _read_json(self, rel: str) -> Any:
        try:
            return orjson.loads(self.ws.read_bytes(rel))
        except (OSError, AgentError, orjson.JSONDecodeError):
            return None

    def state_digest(self, task_id: str, ws_digest: str) -> str:
        """The workspace digest plus how often each action completed for this task.

        Files alone are not enough: a builder that rewrites identical files would leave the
        workspace unchanged, and lorch's review ↔ implement_changes loop would then replay both
        sides forever without asking the model again. The counters are O(1) small reads.
        """
        task_dir = self._task_dir(task_id)
        counts = [f"{a}={self._read_json(f'{task_dir}/.index/{a}.seq') or 0}" for a in _ACTIONS]
        return "sha256:" + hashlib.sha256(f"{ws_digest}|{','.join(counts)}".encode()).hexdigest()

    def completed(self, task_id: str, key: str, action: str) -> int:
        """How many `action` commands completed for this task under this idempotency key.

        lorch reuses one key for every review (and every update_spec) of a task within a run, and
        a new run has a new snapshot and so a new key: this counts the rounds of one loop, and
        keeps counting across a restart of the agent.
        """
        index = self._read_json(self._index_path(task_id, key))
        if not isinstance(index, list):
            return 0
        return sum(1 for e in index if isinstance(e, dict) and e.get("action") == action)

    def lookup(self, cmd: Command, in_digest: str, ws_digest: str) -> tuple[Receipt | None, str]:
        """The matching receipt (artifacts verified) or None, with a reason for the audit log."""
        ws_digest = self.state_digest(cmd.task_id, ws_digest)
        index = self._read_json(self._index_path(cmd.task_id, cmd.idempotency_key))
        if not isinstance(index, list) or not index:
            return None, "no receipt for this idempotency key"
        reason = "inputs changed since the recorded command"
        for entry in reversed(index):
            if entry.get("action") != cmd.action or entry.get("inputs_digest") != in_digest:
                continue
            if entry.get("workspace_digest") != ws_digest:
                reason = "workspace (or the task's other commands) changed since the recorded command"
                continue
            data = self._read_json(entry["receipt"])
            if not isinstance(data, dict):
                reason = f"receipt {entry['receipt']} is missing or unreadable"
                continue
            if not self.key.verify(data):
                self.rejected.append(str(entry["receipt"]))
                reason = f"receipt {entry['receipt']} fails its authentication check: not replayed"
                continue
            if (data.get("idempotency_key"), data.get("action"), data.get("inputs_digest"),
                    data.get("workspace_digest")) != (cmd.idempotency_key, cmd.action, in_digest, ws_digest):
                reason = f"receipt {entry['receipt']} records another command"
                continue
            receipt = Receipt(entry["receipt"], data)
            bad = self._first_changed_artifact(receipt)
            if bad:
                reason = f"artifact {bad} no longer matches its checksum"
                continue
            return receipt, "all digests and artifact checksums match"
        return None, reason

    def _first_changed_artifact(self, receipt: Receipt) -> str | None:
        for art in receipt.artifacts:
            now = self.ws.checksum(art.path)
            if now is None or now.sha256 != art.sha256 or now.size != art.size:
                return art.path
        return None

    def record(self, cmd: Command, in_digest: str, ws_digest: str, artifacts: list[Artifact],
               terminal: dict[str, Any], usage: dict[str, Any] | None = None) -> str:
        """Write the receipt, then its index entry; returns the receipt's workspace path."""
        task_dir = self._task_dir(cmd.task_id)
        n = self._next_number(task_dir, sanitize_id(cmd.action))
        # After the counter moved: an identical resend finds exactly this state and replays.
        ws_digest = self.state_digest(cmd.task_id, ws_digest)
        rel = f"{task_dir}/{sanitize_id(cmd.action)}-{n}.json"
        data: dict[str, Any] = {
            "format": RECEIPT_FORMAT, "task_id": cmd.task_id, "action": cmd.action, "n": n,
            "idempotency_key": cmd.idempotency_key, "inputs_digest": in_digest, "workspace_digest": ws_digest,
            "snapshot_id": cmd.snapshot_id, "command_message_id": cmd.message_id,
            "correlation_id": cmd.correlation_id, "artifacts": [a.to_dict() for a in artifacts],
            "terminal": terminal, "created_at": utc_now(), "agent_version": __version__,
        }
        if usage:
            data["usage"] = usage
        data["mac"] = self.key.mac(data)
        self.ws.write_atomic(rel, orjson.dumps(data, option=orjson.OPT_INDENT_2), policy=AGENT)
        index_rel = self._index_path(cmd.task_id, cmd.idempotency_key)
        index = self._read_json(index_rel)
        entries = index if isinstance(index, list) else []
        entries.append({"action": cmd.action, "inputs_digest": in_digest, "workspace_digest": ws_digest, "receipt": rel})
        self.ws.write_atomic(index_rel, orjson.dumps(entries[-50:]), policy=AGENT)
        return rel

    def _next_number(self, task_dir: str, action: str) -> int:
        """Next free `<action>-<n>` number from a small counter file, without listing the directory."""
        counter_rel = f"{task_dir}/.index/{action}.seq"
        current = self._read_json(counter_rel)
        n = (current if isinstance(current, int) else 0) + 1
        while self.ws.exists(f"{task_dir}/{action}-{n}.json"):
            n += 1
        self.ws.write_atomic(counter_rel, str(n), policy=AGENT)
        return n
