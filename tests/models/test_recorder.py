"""Record then replay: RecordingModel lines are served back by RecordedModel; secrets are redacted."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import orjson
import pytest

from agent.errors import ReplayMiss
from agent.models.base import ModelReply, ModelRequest, Usage
from agent.models.recorded import RecordedModel
from agent.models.recorder import RecordingModel
from agent.models.scripted import ScriptedModel
from agent.redact import Redactor

SECRET = "ghp_SUPERSECRETTOKEN123"


def req(text: str) -> ModelRequest:
    return ModelRequest(messages=[{"role": "system", "content": "You plan."}, {"role": "user", "content": text}],
                        task_type="planning", role="orchestrator")


def test_record_then_replay_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "rec" / "responses.jsonl"
    recorder = RecordingModel(ScriptedModel(["first", "second"], model="m1"), path, Redactor({}))
    r1 = recorder.complete(req("plan A"))
    r2 = recorder.complete(req("plan B"))
    assert (r1.text, r2.text) == ("first", "second")
    lines = path.read_bytes().splitlines()
    assert len(lines) == 2
    entry = orjson.loads(lines[0])
    assert entry["digest"] == req("plan A").digest()
    assert entry["reply"] == {"text": "first", "model": "m1", "provider": "scripted", "finish_reason": "stop"}
    assert set(entry["usage"]) == {"prompt_tokens", "completion_tokens"} and "latency_ms" in entry
    assert (os.stat(path).st_mode & 0o777) == 0o600

    replay = RecordedModel(path)
    assert replay.complete(req("plan B")).text == "second"
    again = replay.complete(req("plan A"))
    assert (again.text, again.model, again.provider) == ("first", "m1", "recorded")
    assert again.usage.prompt_tokens == r1.usage.prompt_tokens


def test_a_reply_cut_at_a_stop_string_replays_as_cut(tmp_path: Path) -> None:
    class Cut:
        def complete(self, request: ModelRequest) -> ModelReply:
            return ModelReply(text="calc.py\n```\nX = 1\n", model="m1", provider="openai", usage=Usage(3, 4, 0.0),
                              finish_reason="stop_string")

        def close(self) -> None:
            pass

    path = tmp_path / "responses.jsonl"
    RecordingModel(Cut(), path, Redactor({})).complete(req("build"))  # type: ignore[arg-type]
    again = RecordedModel(path).complete(req("build"))
    assert (again.text, again.finish_reason) == ("calc.py\n```\nX = 1\n", "stop_string")


def test_secrets_are_redacted_in_the_recording_but_replay_still_matches(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    redactor = Redactor({"GITHUB_TOKEN": SECRET})
    live = req(f"use token {SECRET} to clone")
    RecordingModel(ScriptedModel([f"cloned with {SECRET}"]), path, redactor).complete(live)
    raw = path.read_text()
    assert SECRET not in raw and "[REDACTED]" in raw
    # Keyed on the redacted request: no digest of the secret-bearing prompt is stored...
    assert live.digest() not in raw
    # ...and a replay that redacts the same way matches, whatever the secret's value.
    assert RecordedModel(path, redactor).complete(live).text == "cloned with [REDACTED]"
    other = "ghp_ANOTHERTOKENVALUE99"
    assert RecordedModel(path, Redactor({"GITHUB_TOKEN": other})).complete(
        req(f"use token {other} to clone")).text == "cloned with [REDACTED]"


def test_input_secrets_are_kept_out_of_recorded_prompts_and_replay_matches(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    recording_side = Redactor({})
    recording_side.harvest({"inputs": {"deploy_token": "tok-from-inputs-42"}})
    live = req("deploy with deploy_token=tok-from-inputs-42 please")
    RecordingModel(ScriptedModel(["done"]), path, recording_side).complete(live)
    assert "tok-from-inputs-42" not in path.read_text()
    replay_side = Redactor({})
    replay_side.harvest({"inputs": {"deploy_token": "tok-from-inputs-42"}})
    assert RecordedModel(path, replay_side).complete(live).text == "done"


def test_recordings_keyed_on_plain_digests_still_replay(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    old = {"digest": req("plan A").digest(), "request": {"messages": req("plan A").messages},
           "reply": {"text": "old reply", "model": "m"}}
    path.write_bytes(orjson.dumps(old) + b"\n")
    assert RecordedModel(path, Redactor({"X_TOKEN": "plan A but longer"})).complete(req("plan A")).text == "old reply"


def test_replay_miss_names_the_nearest_request(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    rec = RecordingModel(ScriptedModel(["a", "b"]), path, Redactor({}))
    rec.complete(req("write the parser for the config file"))
    rec.complete(req("completely unrelated topic about gardening"))
    with pytest.raises(ReplayMiss) as err:
        RecordedModel(path).complete(req("write the parser for the config files"))
    assert err.value.details["nearest"] == req("write the parser for the config file").digest()
    assert "first difference" in err.value.message


def test_failed_calls_are_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    rec = RecordingModel(ScriptedModel([]), path, Redactor({}))
    with pytest.raises(Exception, match="no replies left"):
        rec.complete(req("x"))
    assert not path.exists() or path.read_bytes() == b""


def test_concurrent_appends_keep_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    rec = RecordingModel(ScriptedModel(["y" * 5000] * 40), path, Redactor({}))
    threads = [threading.Thread(target=lambda i=i: rec.complete(req(f"q{i}"))) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = path.read_bytes().splitlines()
    assert len(lines) == 40 and all(orjson.loads(line)["reply"]["text"] == "y" * 5000 for line in lines)
