"""A task ends in exactly one true state whatever fails, and says what happened (the real CLI)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Raw
from supervised_support import World, graph

AUTO = {"approvals": {"path_write": "auto", "task_confirmation": "auto"}, "limits": {"llm_backoff_base_seconds": 0}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_500() -> Iterator[int]:
    """A model server that answers every request with HTTP 500."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _fail(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            body = b'{"error": {"message": "internal"}}'
            self.send_response(500)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _fail  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def _state_json(w: World, task_id: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((w.home / "tasks" / task_id / "state.json").read_text())
    return data


def test_run_without_luallm_creates_nothing_and_names_the_fix(tmp_path: Path) -> None:
    w = World(tmp_path, luallm=False)
    w.init()
    refused = w.cli("run", "summarise notes.txt into summary.md")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "luallm binary 'luallm' not found" in refused.stderr and "install luallm" in refused.stderr
    assert "no task was created" in refused.stderr and "Traceback" not in refused.stderr
    assert "PLANNING" not in refused.stdout
    assert not (w.home / "state" / "current_task.json").exists()
    assert list((w.home / "tasks").iterdir()) == []
    audit = w.home / "state" / "audit_log.jsonl"
    assert not audit.exists() or not w.events("task_start")


def test_a_task_whose_every_model_fails_ends_failed_with_the_models_tried_and_the_next_run_starts(
        tmp_path: Path, http_500: int) -> None:
    refused_port = _free_port()
    w = World(tmp_path, installed=("m1", "m2"))
    w.state.write_text(json.dumps({"installed": ["m1", "m2"], "running": {"m1": refused_port, "m2": http_500},
                                   "notes": {}}))
    w.init({**AUTO, "model_selection": {"default": {"prefer": ["m1"], "fallback": ["m2"]}}})
    failed = w.cli("run", "summarise notes.txt into summary.md")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    said = f"every candidate failed: m1 (connection refused at 127.0.0.1:{refused_port}), m2 (HTTP 500)"
    assert said in failed.stdout, failed.stdout
    assert "Traceback" not in failed.stderr
    task = w.current()
    assert task["status"] == "failed" and task["termination_reason"] == "models_failed" and not task["paused"]
    assert [m["model"] for m in task["models_tried"]] == ["m1", "m2"]
    state = _state_json(w, task["id"])
    assert state["status"] == "failed" and state["termination_reason"] == "models_failed"
    assert state["models_tried"] == task["models_tried"]
    end = w.events("task_end")[-1]
    assert end["task_id"] == task["id"] and end["data"]["status"] == "failed"
    assert [m["model"] for m in end["data"]["models_tried"]] == ["m1", "m2"]
    assert not w.events("model_oom")  # a refused connection and an HTTP 500 are not crashes
    assert [e["data"]["reason"] for e in w.events("model_fallback")] == [
        f"connection refused at 127.0.0.1:{refused_port}", "HTTP 500"]
    # The next run is not refused as "in progress".
    g = graph({"id": "1", "action": "llm_call", "depends_on": [], "prompt_template": "x"})
    nxt = w.cli("run", "again", "--scripted-replies", str(w.replies([g, "done"])))
    assert nxt.returncode == 0, nxt.stdout + nxt.stderr
    assert w.current()["status"] == "complete" and w.current()["id"] != task["id"]


def test_a_model_whose_process_is_gone_is_a_crash_and_the_next_candidate_answers(tmp_path: Path) -> None:
    """The one case logged model_oom (with a note suggested): luallm reports the process exited."""
    refused_port = _free_port()
    g = graph({"id": "1", "action": "llm_call", "depends_on": [], "writes": ["out.md"], "prompt_template": "x"})
    with FakeOpenAI([json.dumps(g), "written by m2\n"], model="m2").running() as m2:
        w = World(tmp_path, installed=("m1", "m2"))
        w.state.write_text(json.dumps({"installed": ["m1", "m2"], "running": {"m1": refused_port, "m2": m2.port},
                                       "notes": {}, "dies": {"m1": 1}}))
        w.init({**AUTO, "model_selection": {"default": {"prefer": ["m1", "m2"], "fallback": []}}})
        done = w.cli("run", "write out.md")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (w.ws / "out.md").read_text() == "written by m2\n"
    oom = w.events("model_oom")
    assert [e["data"]["model"] for e in oom] == ["m1"] and oom[0]["data"]["exit_code"] == 137
    assert "luallm notes add m1" in done.stderr
    assert w.events("model_fallback")[0]["data"]["reason"] == "crashed: luallm reports it stopped, exit code 137"
    # set aside for the whole run: the second call goes straight to m2
    assert [e["data"]["model"] for e in w.events("llm_call")] == ["m1", "m2", "m2"]


def test_a_model_that_answers_503_once_is_asked_again_not_given_up(tmp_path: Path) -> None:
    """Supervised calls share the transport retry policy of every other model call."""
    g = graph({"id": "1", "action": "llm_call", "depends_on": [], "writes": ["out.md"], "prompt_template": "x"})
    loading = Raw(503, {"content-type": "application/json"}, b'{"error": {"message": "Loading model"}}')
    with FakeOpenAI([loading, json.dumps(g), "written by m1\n"], model="m1").running() as m1:
        w = World(tmp_path, installed=("m1",))
        w.state.write_text(json.dumps({"installed": ["m1"], "running": {"m1": m1.port}, "notes": {}}))
        w.init(AUTO)
        done = w.cli("run", "write out.md")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (w.ws / "out.md").read_text() == "written by m1\n"
    assert not w.events("model_fallback")
    attempts = [(e["data"]["attempt"], e["data"]["outcome"]) for e in w.events("model_attempt")]
    assert attempts[:2] == [(1, "error"), (2, "ok")]


def test_reset_ends_the_task_in_both_files(tmp_path: Path) -> None:
    w = World(tmp_path, running=())
    w.init({**AUTO, "model_selection": {"default": {"prefer": ["m1"], "fallback": []}}})
    g = graph({"id": "1", "action": "llm_call", "depends_on": [], "prompt_template": "x"})
    paused = w.cli("run", "x", "--scripted-replies", str(w.replies([g, "ok"])))
    assert paused.returncode == 3, paused.stdout + paused.stderr
    task_id = w.current()["id"]
    assert _state_json(w, task_id)["status"] == "paused"
    assert w.cli("run", "--reset").returncode == 0
    assert not (w.home / "state" / "current_task.json").exists()
    state = _state_json(w, task_id)
    assert state["status"] == "stopped" and state["termination_reason"] == "reset"
    end = w.events("task_end")[-1]
    assert end["task_id"] == task_id and end["data"]["termination_reason"] == "reset"
    assert w.cli("run", "y", "--scripted-replies", str(w.replies([g, "ok"]))).returncode == 3  # a fresh task


def test_an_auto_start_that_never_gets_ready_fails_the_task_and_frees_the_next_run(tmp_path: Path) -> None:
    w = World(tmp_path, running=())
    w.init({**AUTO, "model_selection": {"default": {"prefer": ["m1"], "fallback": []}},
            "luallm": {"auto_start": True}, "limits": {"model_start_timeout_seconds": 1}})
    failed = w.cli("run", "x")  # the fake "starts" m1 on a port where nothing listens
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "every candidate failed: m1 (did not start: model 'm1' not ready after 1s" in failed.stdout
    task = w.current()
    assert task["status"] == "failed" and task["termination_reason"] == "models_failed"
    assert _state_json(w, task["id"])["status"] == "failed"
    assert w.events("task_end")[-1]["data"]["status"] == "failed"
    assert "in progress" not in w.cli("run", "y").stderr


def test_luallm_answering_garbage_mid_task_fails_it_cleanly(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.state.write_text(json.dumps({"installed": ["m1"], "running": {"m1": 8001}, "notes": {},
                                   "garbled_status": True}))
    w.init(AUTO)
    failed = w.cli("run", "x", "--scripted-replies", str(w.replies(["{}"])))
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "Traceback" not in failed.stderr and "is not JSON" in failed.stdout
    task = w.current()
    assert task["status"] == "failed" and task["termination_reason"] == "fatal_error"
    state = _state_json(w, task["id"])
    assert state["status"] == "failed" and state["termination_reason"] == "fatal_error"
    assert w.events("task_end")[-1]["data"]["termination_reason"] == "fatal_error"
    assert "in progress" not in w.cli("run", "y").stderr


def test_reset_clears_a_waiting_approval_into_the_books(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init({"limits": {"llm_backoff_base_seconds": 0}})   # path_write and task_confirmation ask
    g = graph({"id": "1", "action": "llm_call", "depends_on": [], "writes": ["out.md"], "prompt_template": "x"})
    assert w.cli("run", "x", "--scripted-replies", str(w.replies([g, "text"]))).returncode == 3
    task_id = w.current()["id"]
    [pending] = list((w.home / "state" / "pending_approvals").glob("*.json"))
    assert w.cli("run", "--reset").returncode == 0
    assert not list((w.home / "state" / "pending_approvals").glob("*.json"))
    kept = json.loads((w.home / "state" / "approvals" / pending.name).read_text())
    assert kept["decision"] == "cleared" and kept["decided_by"] == "luallm-agent run --reset"
    assert _state_json(w, task_id)["status"] == "stopped"
    assert w.cli("doctor").returncode == 0
