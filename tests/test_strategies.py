"""Every repair and fallback has a name: listed, audited when it fires, and switchable off by name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support import ROOT, events, make_command
from test_builder_rounds import BROKEN, CALC, _audit, _ctx

from agent.answering.strategies import STRATEGIES
from agent.roles import builder


def test_repairs_json_lists_each_strategy_and_each_is_applied_where_it_says() -> None:
    proc = subprocess.run([sys.executable, "-m", "agent", "repairs", "--json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert [s["name"] for s in listed] == list(STRATEGIES)
    for s in listed:  # the registry and the code cannot drift apart: the named module gates and audits it
        source = (ROOT / s["where"]).read_text()
        assert f'"{s["name"]}"' in source and "enabled(" in source and "applied(" in source, s


def test_an_unknown_name_is_a_usage_error_naming_the_known_ones(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "agent", "stdio", "--role", "builder", "--workspace", str(tmp_path),
                           "--disable-repair", "no_such_thing"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "no repair named no_such_thing" in proc.stderr and "withdraw_worse_change" in proc.stderr


def _worse_change(ws: Path, disabled: frozenset[str] = frozenset()) -> dict:
    """A round whose change fails every test, where the code as it was passes one."""
    ws.mkdir()
    ctx, _ = _ctx(ws, [BROKEN], rounds=1)
    ctx.settings.disabled_repairs = disabled
    (ws / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    return builder.handle(ctx).payload


def test_a_strategy_fires_audited_and_off_it_does_not(tmp_path: Path) -> None:
    assert _worse_change(tmp_path / "on").get("changes_reverted")
    assert [a["name"] for a in _audit(tmp_path / "on", "repair_applied")] == ["withdraw_worse_change"]
    off = _worse_change(tmp_path / "off", frozenset({"withdraw_worse_change"}))
    assert "changes_reverted" not in off and "nowhere_to_be_found" in (tmp_path / "off" / "calc.py").read_text()
    assert _audit(tmp_path / "off", "repair_applied") == []


def test_the_spec_maintainers_own_entry_can_be_switched_off(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text("# Spec\n\n## Changelog\n- 0.1\n")
    cut_off = '{"status": "updated", "summary": "done", "section_edits": [{"section": "Changelog", "content": "- T'
    got = spawn("spec_maintainer", "--disable-repair", "spec_changelog_by_agent", "--keep-serving-on-failure",
                replies=[cut_off] * 3).run(make_command("update_spec"))
    assert events(got, "error")[-1]["payload"]["code"] == "invalid_model_response"
    assert (workspace / "SPEC.md").read_text() == "# Spec\n\n## Changelog\n- 0.1\n"


def _config(tmp_path: Path, names: list[str]) -> str:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"providers": {"local": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}},
                                "disable_repairs": names}))
    return str(path)


def test_the_config_file_switches_repairs_off_too(spawn, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "SPEC.md").write_text("# Spec\n\n## Changelog\n- 0.1\n")
    cut_off = '{"status": "updated", "summary": "done", "section_edits": [{"section": "Changelog", "content": "- T'
    got = spawn("spec_maintainer", "--config", _config(tmp_path, ["spec_changelog_by_agent"]),
                "--keep-serving-on-failure", replies=[cut_off] * 3).run(make_command("update_spec"))
    assert events(got, "error")[-1]["payload"]["code"] == "invalid_model_response"
    assert (workspace / "SPEC.md").read_text() == "# Spec\n\n## Changelog\n- 0.1\n"


def test_an_unknown_name_in_the_config_is_refused_at_start_naming_the_file(tmp_path: Path) -> None:
    config = _config(tmp_path, ["no_such_thing"])
    proc = subprocess.run([sys.executable, "-m", "agent", "stdio", "--role", "builder", "--workspace", str(tmp_path),
                           "--config", config], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"disable_repairs in {config}: no repair named no_such_thing" in proc.stderr


def test_the_plain_listing_keeps_every_description_in_one_column() -> None:
    proc = subprocess.run([sys.executable, "-m", "agent", "repairs"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == len(STRATEGIES)
    starts = {len(line) - len(line.split("  ", 1)[1].lstrip()) for line in lines}
    assert len(starts) == 1 and all(line.split()[0] in STRATEGIES for line in lines)
