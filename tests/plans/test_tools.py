"""Each tool, called in-process through ToolBox (no worker), plus the registry."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agent.plans import PlanLimits, tools_catalog, tools_prompt_text
from agent.plans.commands import run_for_plan
from agent.plans.tools import TOOL_NAMES, ToolBox, ToolFatal

# What the agent allows in these tests, as --plan-run-allow python3 does.
ALLOW = (*PlanLimits().run_allow, "python3")


class FakeBridge:
    """The agent's side: commands run here (in this process, through the OS sandbox), not in the worker."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.prompts: list[tuple[str, dict[str, Any]]] = []
        self.messages: list[tuple[str, str]] = []
        self.commands: list[str] = []
        self.test_runs = 0

    def call_llm(self, prompt: str, opts: dict[str, Any]) -> str:
        self.prompts.append((prompt, opts))
        return "answer"

    def progress(self, message: str) -> None:
        self.messages.append(("progress", message))

    def log(self, message: str) -> None:
        self.messages.append(("log", message))

    def run_command(self, cmd: str, timeout_s: float) -> dict[str, Any]:
        self.commands.append(cmd)
        return run_for_plan(cmd, root=self.root, allow=ALLOW, timeout_s=timeout_s)

    def run_tests(self, timeout_s: float) -> dict[str, Any]:
        self.test_runs += 1
        return {"status": "pass", "summary": "1 passed", "exit_code": 0, "output_tail": "ok"}


@pytest.fixture
def bridge(ws) -> FakeBridge:
    return FakeBridge(str(ws.root))


@pytest.fixture
def box(ws, bridge) -> ToolBox:
    return ToolBox(ws, PlanLimits(files_written=3, write_bytes=1000, read_bytes=10_000, tool_calls=100, llm_calls=2,
                                  llm_prompt_bytes=100, run_timeout_ms=5000,
                                  # an operator widening the allow-list, as --plan-run-allow does
                                  run_allow=ALLOW),
                   bridge, deadline=time.monotonic() + 30)


def test_catalog_names_every_tool_with_signature():
    names = [t["name"] for t in tools_catalog()]
    assert names == list(TOOL_NAMES)
    assert all(t["signature"].startswith(f"tools.{t['name']}(") and t["description"] for t in tools_catalog())
    text = tools_prompt_text()
    assert all(f"tools.{n}(" in text for n in names)


def test_read_whole_file_and_line_range(box):
    assert box.call("read", [b"hello.txt"]) == b"hello\nworld\nthird line\n"
    assert box.call("read", [b"hello.txt", {"line_range": [2, 3]}]) == b"world\nthird line\n"
    assert box.call("read", [{"file": b"hello.txt", "max_bytes": 5}]) == b"hello"


def test_read_missing_file_is_an_error_result(box):
    assert box.call("read", [b"nope.txt"])["code"] == "not_found"
    assert box.call("read", [b"src"])["code"] == "not_a_file"


def test_read_quota_stops_the_plan(box, ws):
    (ws.root / "big.txt").write_bytes(b"x" * 6000)
    box.call("read", [b"big.txt"])
    with pytest.raises(ToolFatal) as exc:
        box.call("read", [b"big.txt"])
    assert exc.value.quota == "read_bytes"


def test_write_is_atomic_artifact(box, ws):
    res = box.call("write", [b"out/a.txt", b"data"])
    assert res["path"] == "out/a.txt" and res["size"] == 4 and res["sha256"].startswith("sha256:")
    assert (ws.root / "out" / "a.txt").read_bytes() == b"data"
    assert box.artifacts == [res]
    assert (ws.root / "out" / "a.txt").stat().st_mode & 0o777 == 0o600


def test_write_quotas(box):
    with pytest.raises(ToolFatal) as exc:
        box.call("write", [b"a.txt", b"x" * 2000])
    assert exc.value.quota == "write_bytes"
    for i in range(3):
        box.call("write", [f"f{i}.txt".encode(), b"x"])
    box.call("write", [b"f0.txt", b"again"])  # rewriting a file does not count twice
    with pytest.raises(ToolFatal) as exc:
        box.call("write", [b"f9.txt", b"x"])
    assert exc.value.quota == "files_written"


def test_create_refuses_existing_file(box):
    assert box.call("create", [b"new.txt", b"1"])["size"] == 1
    assert box.call("create", [b"new.txt", b"2"])["code"] == "exists"


@pytest.mark.parametrize("old_key,new_key", [("old", "new"), ("old_string", "new_string"), ("old_text", "new_text"),
                                             ("oldText", "newText"), ("search", "replace"), ("from", "to")])
def test_edit_accepts_every_alias(box, ws, old_key, new_key):
    res = box.call("edit", [{"filepath": b"src/main.py", old_key: b"42", new_key: b"43"}])
    assert res["replacements"] == 1
    assert "return 43" in (ws.root / "src" / "main.py").read_text()


def test_edit_ambiguous_not_found_and_replace_all(box, ws):
    (ws.root / "r.txt").write_text("a a a")
    assert box.call("edit", [b"r.txt", b"a", b"b"])["code"] == "ambiguous"
    assert box.call("edit", [b"r.txt", b"zzz", b"b"])["code"] == "not_found"
    assert box.call("edit", [b"r.txt", b"a", b"b", {"replace_all": True}])["replacements"] == 3
    assert (ws.root / "r.txt").read_text() == "b b b"


def test_edit_not_copied_exactly_names_the_line_to_copy(box, ws):
    # old quoted without the docstring: not placed by guesswork, the error says where its first line is
    text = 'def is_p(t):\n    """True when t reads the same both ways."""\n    return t == t[::-1]\n'
    (ws.root / "p.py").write_text(text)
    res = box.call("edit", [b"p.py", b"def is_p(t):\n    return t == t[::-1]\n", b"def is_p(t):\n    return 1\n"])
    assert res["code"] == "not_found" and "'def is_p(t):') is at line 1" in res["error"]
    res = box.call("edit", [b"p.py", b"def is_pal(t, n):", b"x"])
    assert res["code"] == "not_found" and "the nearest is line 1: 'def is_p(t):'" in res["error"]
    assert (ws.root / "p.py").read_text() == text
    assert box.call("edit", [b"gone.py", b"x", b"y"])["code"] == "not_found" and not (ws.root / "gone.py").exists()


def test_list_marks_directories(box):
    assert box.call("list", []) == box.call("list", [b"."])
    names = box.call("list", [b"."])
    assert "src/" in names and "hello.txt" in names
    assert box.call("list", [b"src"]) == ["main.py", "util.lua"]
    assert box.call("list", [b"hello.txt"])["code"] == "not_a_directory"


def test_glob_patterns(box):
    assert box.call("glob", [b"*.py"]) == ["src/main.py"]
    assert box.call("glob", [b"src/**/*.lua"]) == ["src/util.lua"]
    assert box.call("glob", [b"**"]) == ["hello.txt", "secret_link.txt", "src/main.py", "src/util.lua"]
    assert box.call("glob", [b"*", {"max_depth": 1}]) == ["hello.txt", "secret_link.txt"]
    assert len(box.call("glob", [b"*", {"max_results": 2}])) == 2
    assert box.call("glob", [{"globs": [b"*.lua", b"*.txt"], "start_path": b"src"}]) == ["src/util.lua"]


def test_grep_regex_literal_and_globs(box):
    hits = box.call("grep", [b"wor.d"])
    assert hits == [{"path": "hello.txt", "line": 2, "text": "world"}]
    assert box.call("grep", [b"wor.d", {"literal": True}]) == []
    assert box.call("grep", [b"return", {"globs": [b"*.py"]}]) == [{"path": "src/main.py", "line": 2, "text": "    return 42"}]
    assert box.call("grep", [b"(unclosed"]) == []  # not a regex: searched literally
    assert box.call("grep", [b"secret"]) == []       # the symlink out of the workspace is not followed


def test_run_pipeline_and_cwd(box, bridge):
    res = box.call("run", [b"cat hello.txt | wc -l"])
    assert res["exit_code"] == 0 and res["stdout"].strip() == "3"
    assert bridge.commands == ["cat hello.txt | wc -l"]  # run by the agent, not by the worker


def test_test_tool_asks_the_agent_and_returns_its_result(box, bridge):
    assert box.call("test", [])["status"] == "pass" and bridge.test_runs == 1


def test_run_sequencing_operators(box):
    assert box.call("run", [b"false && echo no"])["stdout"] == ""
    assert box.call("run", [b"false || echo yes"])["stdout"] == "yes\n"
    assert box.call("run", [b"false ; echo always"])["stdout"] == "always\n"


def test_run_expands_globs_without_a_shell(box):
    out = box.call("run", [b"ls src/*.py"])["stdout"]
    assert out.strip() == "src/main.py"
    assert box.call("run", [b"echo $HOME"])["stdout"] == "$HOME\n"


def test_run_scrubs_secrets_from_env(box, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "hunter2-secret")
    monkeypatch.setenv("PLAIN_VAR", "visible")
    out = box.call("run", [b"python3 -c \"import os; print(os.environ.get('MY_API_KEY'), os.environ.get('PLAIN_VAR'))\""])
    assert out["stdout"] == "None visible\n"


def test_run_timeout_kills(box):
    t = time.monotonic()
    res = box.call("run", [b"python3 -c \"import time; time.sleep(10)\"", {"timeout_ms": 300}])
    assert res["timed_out"] and time.monotonic() - t < 3


def test_run_rejects_unlisted_command(box):
    res = box.call("run", [b"curl http://example.com"])
    assert res["code"] == "command_rejected" and "'curl'" in res["error"]


def test_call_llm_counts_calls_and_prompt_bytes(box, bridge):
    assert box.call("call_llm", [b"hi", {"temperature": 0}]) == "answer"
    assert bridge.prompts == [("hi", {"temperature": 0})]
    with pytest.raises(ToolFatal) as exc:
        box.call("call_llm", [b"x" * 200])
    assert exc.value.quota == "llm_prompt_bytes"


def test_progress_and_log_reach_the_bridge(box, bridge):
    assert box.call("progress", [b"half way"]) is True
    assert box.call("log", [{"message": b"note"}]) is True
    assert bridge.messages == [("progress", "half way"), ("log", "note")]


def test_failed_calls_count_toward_the_call_quota(ws, bridge):
    box = ToolBox(ws, PlanLimits(tool_calls=3), bridge, deadline=time.monotonic() + 5)
    for _ in range(3):
        assert "error" in box.call("read", [b"missing"])
    with pytest.raises(ToolFatal):
        box.call("read", [b"hello.txt"])
    assert [c["ok"] for c in box.calls] == [False] * 4


def test_unknown_argument_and_missing_argument(box):
    assert "unknown argument 'bogus'" in box.call("read", [{"path": b"hello.txt", "bogus": 1}])["error"]
    assert "missing argument 'content'" in box.call("write", [b"x.txt"])["error"]


def test_every_call_is_recorded(box):
    box.call("read", [b"hello.txt"])
    box.call("read", [b"nope"])
    first, second = box.calls
    assert first["tool"] == "read" and first["ok"] and first["result_bytes"] == 23 and first["ms"] >= 0
    assert second["ok"] is False and "error" in second


def test_run_rejects_path_arguments_outside_the_workspace(box):
    for cmd in (b"cat /etc/passwd", b"cat ../outside.txt", b"grep --file=/etc/passwd x"):
        out = box.call("run", [cmd])
        assert "error" in out and "leaves the workspace" in out["error"], cmd


def test_run_rejects_a_symlink_out_of_the_workspace(box, ws, tmp_path):
    (ws.root / "link").symlink_to("/etc")
    out = box.call("run", [b"cat link/hostname"])
    assert "error" in out and "leaves the workspace" in out["error"]


def test_default_allow_list_refuses_interpreters(ws, bridge):
    plain = ToolBox(ws, PlanLimits(), bridge, deadline=time.monotonic() + 30)
    out = plain.call("run", [b"python3 -c 'print(1)'"])
    assert "error" in out and "not an allowed command" in out["error"]


@pytest.mark.parametrize("path", ["receipts/T-1/review-1.json", "receipts/T-1/.index/x.json", "logs/luallm-agent/audit.jsonl",
                                  ".git/hooks/pre-commit", "src/.env", "state/run.json"])
def test_plans_cannot_write_bookkeeping_or_dot_paths(box, ws, path):
    out = box.call("write", [path.encode(), b"forged"])
    assert out.get("code") == "path_rejected" and "protected" in out["error"], out
    assert not (ws.root / path).exists()


def test_read_only_roles_cannot_write(ws, bridge):
    from agent.plans.tools import READ_ONLY_TOOLS

    ro = ToolBox(ws, PlanLimits(tools=READ_ONLY_TOOLS), bridge, deadline=time.monotonic() + 30)
    for name, args in (("write", [b"a.txt", b"x"]), ("create", [b"a.txt", b"x"]), ("edit", [b"a.txt", b"x", b"y"])):
        out = ro.call(name, args)
        assert out.get("code") == "tool_not_allowed", (name, out)
    assert not (ws.root / "a.txt").exists()
    assert isinstance(ro.call("list", [b"."]), list)


@pytest.fixture(params=["ripgrep", "python"])
def grep_engine(request, monkeypatch):  # type: ignore[no-untyped-def]
    from agent.plans.search import ripgrep_binary

    ripgrep_binary.cache_clear()
    if request.param == "ripgrep":
        if ripgrep_binary() is None:
            pytest.skip("ripgrep (the `ripgrep` wheel's rg) is not installed here")
    else:
        monkeypatch.setenv("LUALLM_AGENT_RIPGREP", "0")
    yield request.param
    ripgrep_binary.cache_clear()


def test_grep_honours_ignore_rules_and_bookkeeping_with_either_engine(box, ws, grep_engine):
    root = ws.root
    (root / ".gitignore").write_text("node_modules/\n*.gen.py\n")
    for rel in ("node_modules/dep/x.py", "src/a.gen.py", "receipts/T/r.json", ".hidden/h.py", "src/ok.py",
                "logs/luallm-agent/audit.jsonl", "deep/dir/found.txt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("needle here\n")
    got = box.call("grep", [b"needle"])
    assert sorted(h["path"] for h in got) == ["deep/dir/found.txt", "src/ok.py"]
    assert all(h["line"] == 1 and h["text"] == "needle here" for h in got)
    assert box.call("grep", [b"needle", {"globs": [b"*.py"]}]) == [{"path": "src/ok.py", "line": 1, "text": "needle here"}]
    # never through a link out of the workspace
    assert box.call("grep", [b"top secret"]) == []
    # an invalid regex is searched literally by both engines
    (root / "src" / "re.txt").write_text("a(b\n")
    assert [h["path"] for h in box.call("grep", [b"a(b"])] == ["src/re.txt"]
