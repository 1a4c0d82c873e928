"""`doctor` and `run --help` tell the truth; the seed's `--resume`/`--reset` spellings work;
`auto_stop` stops what the task started (the real CLI, a fake luallm)."""

from __future__ import annotations

import json
from pathlib import Path

from fake_openai import FakeOpenAI
from supervised_support import World, graph


def _checks(w: World) -> tuple[int, dict[str, dict[str, str]]]:
    done = w.cli("doctor", "--json")
    report = json.loads(done.stdout)
    return done.returncode, {c["name"]: c for c in report["checks"]}


def test_doctor_reports_the_sandbox_that_luallm_agent_sandbox_reports(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init()
    _, checks = _checks(w)
    sandbox = json.loads(w.cli("sandbox", "--json").stdout)
    assert checks["OS sandbox"]["detail"] == sandbox["summary"]
    assert checks["OS sandbox"]["level"] == ("ok" if sandbox["confined"] else "info")


def test_doctor_reads_luallm_notes_against_the_selection_policy(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.state.write_text(json.dumps({"installed": ["m1"], "running": {"m1": 8001},
                                   "notes": {"m1": "# m1\nunsuitable: planning\n"}}))
    w.init({"model_selection": {"planning": {"prefer": ["m1"], "fallback": []},
                                "simple_transform": {"prefer": ["m1"], "fallback": []}}})
    code, checks = _checks(w)
    assert code == 2
    assert checks["planning"]["level"] == "warn"
    assert "luallm notes mark m1 unsuitable for planning" in checks["planning"]["detail"]
    assert checks["simple_transform"]["level"] == "ok"


def test_doctor_checks_notes_when_the_selection_is_empty_too(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.state.write_text(json.dumps({"installed": ["m1"], "running": {"m1": 8001},
                                   "notes": {"m1": "unsuitable: planning"}}))
    w.init()
    code, checks = _checks(w)
    assert code == 2 and checks["planning"]["level"] == "warn"
    # and run agrees: the only running model is not used for planning
    refused = w.cli("run", "x", "--scripted-replies", str(w.replies(["{}"])))
    assert refused.returncode == 1 and "flagged unsuitable" in w.current()["error"]


def test_the_seeds_resume_and_reset_spellings_work(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.init()
    (w.home / "state" / "current_task.json").write_text("{not json")
    resumed = w.cli("--resume")
    assert resumed.returncode == 2 and "luallm-agent run --reset" in resumed.stderr
    assert "arguments are required" not in resumed.stderr
    assert w.cli("--reset").returncode == 0
    assert not (w.home / "state" / "current_task.json").exists()


def test_run_help_says_how_to_point_it_at_a_model(tmp_path: Path) -> None:
    w = World(tmp_path)
    shown = w.cli("run", "--help").stdout
    assert '"model_selection": {"default": {"prefer": ["MODEL"]' in shown
    assert "luallm-agent init --model MODEL" in shown and '"providers"' in shown
    assert "logs/luallm-agent/plans/" in shown


def test_auto_stop_stops_the_model_the_task_started(tmp_path: Path) -> None:
    with FakeOpenAI([]).running() as server:
        w = World(tmp_path, running=())
        w.state.write_text(json.dumps({"installed": ["m1"], "running": {}, "notes": {},
                                       "ports": {"m1": server.port}}))
        w.init({"approvals": {"task_confirmation": "auto"},
                "model_selection": {"default": {"prefer": ["m1"], "fallback": []}},
                "luallm": {"auto_start": True, "auto_stop": True}})
        g = graph({"id": "1", "action": "llm_call", "depends_on": [], "prompt_template": "x"})
        done = w.cli("run", "x", "--scripted-replies", str(w.replies([g, "ok"])))
    assert done.returncode == 0, done.stdout + done.stderr
    calls = [json.loads(line) for line in Path(str(w.state) + ".calls").read_text().splitlines()]
    assert ["start", "m1"] in calls and calls[-1] == ["stop", "m1"]
    assert json.loads(w.state.read_text())["running"] == {}
    assert [e["data"]["model"] for e in w.events("model_stop")] == ["m1"]
