"""Agent Skills (SKILL.md): discovery levels, frontmatter, invocation flags, allowed-tools in plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.plans.limits import PlanLimits
from agent.plans.runner import run_plan
from agent.skills.agent_skills import discover, map_tools
from agent.skills.catalog import skills_prompt_text
from agent.workspace import Workspace


def _skill(root: Path, name: str, front: str, body: str = "Do the thing step by step.\n") -> None:
    d = root / name
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\n{front}\n---\n{body}")


@pytest.fixture()
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir()
    return tmp_path / "home", project


def test_levels_and_precedence(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    _skill(home / ".luallm-agent" / "skills", "deploy", "name: deploy\ndescription: personal deploy")
    _skill(project / ".luallm-agent" / "skills", "deploy", "name: deploy\ndescription: project deploy")
    _skill(project / ".luallm-agent" / "skills", "lint", "name: lint\ndescription: project lint")
    _skill(home / ".claude" / "skills", "lint", "name: lint\ndescription: compat lint")
    _skill(home / ".claude" / "skills", "pdf", "name: pdf\ndescription: compat pdf")
    found = {s.name: (s.level, s.description) for s in discover(project)}
    assert found == {"deploy": ("personal", "personal deploy"), "lint": ("project", "project lint"),
                     "pdf": ("compat", "compat pdf")}


def test_flags_and_body_loaded_on_demand(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    root = project / ".luallm-agent" / "skills"
    _skill(root, "secret", "name: secret\ndescription: only people\ndisable-model-invocation: true")
    _skill(root, "helper", "name: helper\ndescription: only the model\nuser-invocable: false\n"
                           "allowed-tools: Read, Grep, Bash(git:*), WebFetch", body="# Helper\nread then grep\n")
    skills = {s.name: s for s in discover(project)}
    assert skills["secret"].disable_model_invocation and skills["secret"].user_invocable
    helper = skills["helper"]
    assert not helper.user_invocable and helper.allowed_tools == ("read", "grep", "run")
    assert helper.unmapped_tools == ("WebFetch",)
    assert helper.body() == "# Helper\nread then grep\n"
    text = skills_prompt_text(str(home), project)
    assert "- helper — only the model" in text and "secret" not in text
    assert map_tools(["Write", "Edit"]) == (("write", "edit"), ())


def test_bad_yaml_is_not_a_crash(dirs: tuple[Path, Path]) -> None:
    _, project = dirs
    _skill(project / ".luallm-agent" / "skills", "odd", "name: [unclosed\n: :")
    assert [s.name for s in discover(project)] == ["odd"]


def test_plan_loads_instructions_and_allowed_tools_bind_it(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    home, project = dirs
    root = project / ".luallm-agent" / "skills"
    _skill(root, "reader", "name: reader\ndescription: read only\nallowed-tools: Read", body="Only read.\n")
    _skill(root, "hidden", "name: hidden\ndescription: d\ndisable-model-invocation: true")
    (project / "a.txt").write_text("x")
    plan = '''function run(ctx)
  local hidden = skills.instructions("hidden")
  local s = skills.instructions("reader")
  local w = tools.write("b.txt", "y")
  return { body = s.body, tools = s.allowed_tools, write = w.code, read = tools.read("a.txt"), hidden = hidden.error }
end'''
    out = run_plan(plan, {}, workspace=Workspace(project), limits=PlanLimits(skills_home=str(tmp_path / "agent")))
    assert out.result["body"] == "Only read.\n" and out.result["tools"] == ["read"]
    assert out.result["write"] == "tool_not_allowed" and out.result["read"] == "x"
    assert "disable-model-invocation" in out.result["hidden"]
    assert not (project / "b.txt").exists()
