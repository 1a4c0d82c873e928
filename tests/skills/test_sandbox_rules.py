"""Every skill sandbox rule, proven by a skill that tries to cross it (run in the real worker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from skill_support import audit_events, audit_of, write_skill

from agent.skills.home import ALLOWED, DRAFT, SkillsHome
from agent.skills.paths import PathDenied, SkillPathPolicy
from agent.skills.runner import SKILL_OUTPUT_BYTES, run_skill_tests


@pytest.fixture()
def home(tmp_path: Path) -> SkillsHome:
    return SkillsHome(tmp_path / "home")


def _run(home: SkillsHome, name: str, tier: str = DRAFT):  # type: ignore[no-untyped-def]
    report = run_skill_tests(home, name, tier, audit=audit_of(home))
    assert report.error is None, report.error
    return report


def _violations(home: SkillsHome) -> list[str]:
    return [e["message"] for e in audit_events(home, "sandbox_violation")]


def test_undeclared_path_is_refused_and_audited(home: SkillsHome) -> None:
    (home.draft_dir / "fixtures" / "scoped" / "data").mkdir(parents=True)
    (home.draft_dir / "fixtures" / "scoped" / "data" / "seed.txt").write_text("")
    write_skill(home, DRAFT, "scoped", paths=("data/*",), test='''
test.case("declared path works", function()
  local f = assert(io.open("data/a.txt", "w")); f:write("x"); f:close()
  test.eq(io.open("data/a.txt"):read("a"), "x")
end)
test.case("undeclared path is refused", function()
  test.errors(function() io.open("other.txt", "w") end, "path not declared in skill metadata: other.txt")
end)
test.case("outside the base dir is refused", function()
  test.errors(function() io.lines("/tmp/not-declared-anywhere.txt") end, "path not in allowed list")
end)''')
    report = _run(home, "scoped")
    assert (report.passed, report.total) == (3, 3), report.results
    assert "path not declared in skill metadata: other.txt" in _violations(home)
    assert [e["mode"] for e in audit_events(home, "file_write")] == ["w"]
    assert len(audit_events(home, "file_read")) == 1


def test_symlink_out_of_a_declared_dir_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "ws"
    base.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    (base / "link.txt").symlink_to(secret)
    policy = SkillPathPolicy(skill="s", declared=("**",), base_dir=str(base), allowed_paths=(),
                             blocked_paths=(), read_only_roots=())
    assert policy.check("plain.txt", write=True) == str(base / "plain.txt")
    with pytest.raises(PathDenied, match="path not in allowed list: link.txt"):
        policy.check("link.txt", write=False)


def test_undeclared_dependency_is_refused(home: SkillsHome) -> None:
    write_skill(home, ALLOWED, "helper")
    write_skill(home, DRAFT, "greedy", body='local M = {}\nfunction M.run() return require("helper") end\nreturn M\n',
                test='test.case("x", function() test.errors(greedy.run, "undeclared dependency: helper") end)')
    assert _run(home, "greedy").passed == 1
    assert "undeclared dependency: helper" in _violations(home)


def test_declared_dependency_runs_in_its_own_environment(home: SkillsHome) -> None:
    write_skill(home, ALLOWED, "counter", body="local M = {n = 0}\nstring.shout = 1\nfunction M.run() M.n = M.n + 1 "
                "return M.n end\nreturn M\n")
    write_skill(home, DRAFT, "user", deps=("counter",), body='local c = require("counter")\nlocal M = {}\n'
                "function M.run() return c.run(), string.shout end\nreturn M\n",
                test='test.case("x", function() local n, shout = user.run(); test.eq(n, 1); test.eq(shout, nil) end)')
    assert _run(home, "user").passed == 1


def test_dependency_cycle_is_rejected(home: SkillsHome) -> None:
    write_skill(home, ALLOWED, "a", deps=("b",), body='local b = require("b")\nreturn {run = function() end}\n')
    write_skill(home, ALLOWED, "b", deps=("a",), body='local a = require("a")\nreturn {run = function() end}\n')
    write_skill(home, DRAFT, "c", deps=("a",), body='local M = {}\nfunction M.run() return require("a") end\nreturn M\n',
                test='test.case("x", function() end)')
    # Rejected when `c` is loaded, before any of a, b or c runs.
    report = run_skill_tests(home, "c", DRAFT, audit=audit_of(home))
    assert report.exit_code == 2 and "dependency cycle: a -> b -> a" in str(report.error)
    assert "dependency cycle: a -> b -> a" in _violations(home)


def test_a_draft_may_not_depend_on_a_draft(home: SkillsHome) -> None:
    write_skill(home, DRAFT, "other_draft")
    write_skill(home, DRAFT, "d", deps=("other_draft",),
                body='local M = {}\nfunction M.run() return require("other_draft") end\nreturn M\n',
                test='test.case("x", function() test.errors(d.run, "draft skill may not be a dependency: other_draft") end)')
    assert _run(home, "d").passed == 1
    assert any(m.startswith("draft skill may not be a dependency: other_draft") for m in _violations(home))


def test_a_skill_cannot_write_into_allowed(home: SkillsHome) -> None:
    target = write_skill(home, ALLOWED, "victim")
    before = target.read_bytes()
    home.root.joinpath("config.json").write_text(json.dumps({"allowed_paths": [str(home.root)]}))
    write_skill(home, DRAFT, "vandal", paths=(str(home.root) + "/**",), test=f'''
test.case("read is fine", function() test.truthy(io.open("{target}")) end)
test.case("write is refused", function()
  test.errors(function() io.open("{target}", "w") end, "path is read-only for skills")
end)
test.case("config is refused", function()
  test.errors(function() io.open("{home.config_path}", "a") end, "path is read-only for skills")
end)''')
    assert _run(home, "vandal").passed == 3
    assert target.read_bytes() == before


def test_the_eleventh_open_handle_is_refused(home: SkillsHome) -> None:
    write_skill(home, DRAFT, "hoarder", test='''
test.case("ten is the limit", function()
  local open = {}
  for i = 1, 10 do open[i] = assert(io.open("f" .. i, "w")) end
  test.errors(function() io.open("f11", "w") end, "too many open files (limit 10)")
  open[1]:close()
  test.truthy(io.open("f11", "w"))
end)''')
    assert _run(home, "hoarder").passed == 1
    assert "too many open files (limit 10)" in _violations(home)


def test_output_is_capped_at_ten_megabytes(home: SkillsHome) -> None:
    write_skill(home, DRAFT, "chatty", test='''
test.case("floods", function()
  local mb = string.rep("x", 1024 * 1024 - 1)
  for i = 1, 11 do print(mb) end
end)''')
    report = _run(home, "chatty")
    assert report.passed == 1
    assert report.output_truncated and len(report.output.encode()) == SKILL_OUTPUT_BYTES


def test_forbidden_globals_stay_forbidden_in_skills(home: SkillsHome) -> None:
    write_skill(home, DRAFT, "escaper", body="local M = {}\nfunction M.run() return os.execute('id') end\nreturn M\n",
                test='test.case("x", function() escaper.run() end)')
    report = run_skill_tests(home, "escaper", DRAFT)
    assert report.exit_code == 2 and report.error is not None
    assert report.error["code"] == "sandbox_violation" and "forbidden: os" in report.error["message"]


def test_exec_needs_declared_commands(home: SkillsHome) -> None:
    write_skill(home, DRAFT, "runner", body="local M = {}\nfunction M.run(c) return exec(c) end\nreturn M\n",
                test='test.case("x", function() test.errors(function() runner.run("echo hi") end, '
                     '"exec is not declared") end)')
    assert _run(home, "runner").passed == 1


def test_exit_codes_zero_one_two(home: SkillsHome) -> None:
    write_skill(home, DRAFT, "ok1", test='test.case("x", function() test.eq(ok1.run(), 1) end)')
    write_skill(home, DRAFT, "bad1", test='test.case("x", function() test.eq(bad1.run(), 2) end)')
    write_skill(home, DRAFT, "broken", test="this is not lua")
    write_skill(home, DRAFT, "silent")
    (home.draft_dir / "silent_test.lua").write_text('local test = require("luallm_test")\n')
    assert run_skill_tests(home, "ok1", DRAFT).exit_code == 0
    failing = run_skill_tests(home, "bad1", DRAFT)
    assert failing.exit_code == 1 and failing.results[0]["message"].endswith("expected 2, got 1")
    assert run_skill_tests(home, "broken", DRAFT).exit_code == 2
    silent = run_skill_tests(home, "silent", DRAFT)
    assert silent.exit_code == 2 and "run_all" in str(silent.error)
