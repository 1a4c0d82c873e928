"""`luallm-agent skills ...`: list, show, test, samples, draft, resume (a person's commands).

This module prints (it is a CLI module); everything it shows comes from the library modules.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "main"]


def _out(text: str) -> None:
    sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(f"luallm-agent skills: {text}\n")


def _home(args: argparse.Namespace) -> Any:
    from agent.skills.home import SkillsHome, default_home

    return SkillsHome(default_home(args.home))


def _audit(home: Any) -> Any:
    """The home's audit log in its one format (supervised-audit schema: ts, event, task_id, data),
    rotated as config.json's `audit` section says; these commands belong to no task."""
    from agent.errors import AgentError
    from agent.supervised.events import TaskAudit

    try:
        raw = home.config().raw.get("audit")
    except AgentError:  # an unreadable config is reported by the command itself, not here
        raw = None
    audit = raw if isinstance(raw, dict) else {}
    return TaskAudit(home.audit_path, max_bytes=int(float(audit.get("max_size_mb", 50)) * 1024 * 1024),
                     keep=int(audit.get("max_files", 5)), task_id=None)


def _entries(home: Any) -> list[dict[str, Any]]:
    from agent.errors import AgentError
    from agent.skills.agent_skills import discover
    from agent.skills.home import ALLOWED, DRAFT
    from agent.skills.runner import last_test_status

    rows: list[dict[str, Any]] = []
    for tier in (ALLOWED, DRAFT):
        for name in home.names(tier):
            try:
                skill = home.load(name, tier)
            except AgentError as exc:
                rows.append({"name": name, "source": tier, "kind": "lua", "error": exc.message})
                continue
            rows.append({"name": name, "version": skill.meta.version, "description": skill.meta.description,
                         "source": tier, "kind": "lua", "public_functions": list(skill.meta.public_functions),
                         "test_status": last_test_status(home, skill) if skill.test_path else "no tests"})
    for s in discover(Path.cwd()):
        rows.append({"name": s.name, "description": s.description, "source": s.level, "kind": "agent_skill",
                     "path": str(s.path), "user_invocable": s.user_invocable,
                     "model_invocable": not s.disable_model_invocation})
    return rows


def cmd_list(args: argparse.Namespace) -> int:
    rows = _entries(_home(args))
    if args.json:
        _out(json.dumps(rows, ensure_ascii=False))
        return 0
    if not rows:
        _out("no skills")
        return 0
    for r in rows:
        if "error" in r:
            _out(f"{r['name']:<24} {'?':<8} {r['source']:<8} INVALID: {r['error']}")
        else:
            status = r.get("test_status", "-")
            _out(f"{r['name']:<24} {r.get('version', '-'):<8} {r['source']:<8} {status:<9} {r['description']}")
    return 0


def _pick_tier(home: Any, name: str, draft: bool) -> str:
    from agent.skills.home import ALLOWED, DRAFT

    if draft:
        return DRAFT
    return ALLOWED if home.skill_path(name, ALLOWED).is_file() else DRAFT


def cmd_test(args: argparse.Namespace) -> int:
    from agent.plans.pool import shutdown_workers
    from agent.skills.runner import run_skill_tests

    home = _home(args)
    try:
        report = run_skill_tests(home, args.name, _pick_tier(home, args.name, args.draft), audit=_audit(home))
    finally:
        shutdown_workers()
    _out(json.dumps(report.to_dict(), ensure_ascii=False))
    if report.error:
        _err(f"{report.error.get('code')}: {report.error.get('message')}")
    return report.exit_code


def cmd_show(args: argparse.Namespace) -> int:
    from agent.errors import AgentError
    from agent.skills.agent_skills import discover

    home = _home(args)
    try:
        skill = home.load(args.name, _pick_tier(home, args.name, args.draft))
    except AgentError as lua_exc:
        for s in discover(Path.cwd()):
            if s.name == args.name:
                if not s.user_invocable:
                    _err(f"{s.name} is not user-invocable (user-invocable: false)")
                    return 1
                _out(f"# {s.name} ({s.level}: {s.path})\n{s.description}\n\n{s.body()}")
                return 0
        _err(f"{lua_exc.code}: {lua_exc.message}")
        return 1
    meta = skill.meta.to_dict()
    if args.json:
        _out(json.dumps({**meta, "source": skill.tier, "path": str(skill.path),
                         "test": str(skill.test_path) if skill.test_path else None}))
        return 0
    _out(f"{skill.name} v{skill.meta.version} ({skill.tier}: {skill.path})\n{skill.meta.description}\n"
         f"public functions: {', '.join(skill.meta.public_functions)}\n"
         f"paths: {', '.join(skill.meta.paths) or '(none)'}\n"
         f"dependencies: {', '.join(skill.meta.dependencies) or '(none)'}\n"
         f"commands: {', '.join(skill.meta.commands) or '(none)'}\n---\n{skill.path.read_text(encoding='utf-8')}")
    return 0


def cmd_samples(args: argparse.Namespace) -> int:
    from agent.skills.samples import SAMPLES_DIR, sample_names

    home = _home(args)
    _out(f"sample skills: {SAMPLES_DIR}")
    _out("to install them (the agent never writes skills/allowed/ itself), run:")
    _out(f"mkdir -p {shlex.quote(str(home.allowed_dir))}")
    for name in sample_names():
        for f in (f"{name}.lua", f"{name}_test.lua"):
            _out(f"cp {shlex.quote(str(SAMPLES_DIR / f))} {shlex.quote(str(home.allowed_dir))}/")
    _out(f"cp -r {shlex.quote(str(SAMPLES_DIR / 'fixtures'))} {shlex.quote(str(home.allowed_dir))}/")
    _out(f"chmod 444 {shlex.quote(str(home.allowed_dir))}/*.lua")
    return 0


def _model(args: argparse.Namespace, audit: Any) -> Any:
    from agent.models.base import ModelSettings
    from agent.models.factory import build_model_client
    from agent.redact import Redactor

    if args.scripted_replies:
        from agent.models.scripted import ScriptedModel

        return ScriptedModel.from_file(args.scripted_replies)
    settings = ModelSettings(model=args.model or os.environ.get("LUALLM_AGENT_MODEL"),
                             base_url=args.base_url or os.environ.get("OPENAI_BASE_URL"),
                             api_key=os.environ.get("OPENAI_API_KEY"),
                             config_path=args.config or os.environ.get("LUALLM_AGENT_CONFIG"),
                             responses_path=args.replay, record_path=args.record)
    return build_model_client(settings, audit, Redactor())


def cmd_draft(args: argparse.Namespace) -> int:
    from agent.errors import AgentError
    from agent.plans.pool import shutdown_workers
    from agent.skills.lifecycle import SkillLifecycle
    from agent.skills.panel import render_panel

    home = _home(args)
    audit = _audit(home)
    try:
        life = SkillLifecycle(home, model=_model(args, audit), audit=audit, max_retries=args.max_retries)
        outcome = life.draft(args.name, args.spec)
    except AgentError as exc:
        _err(f"{exc.code}: {exc.message}")
        return 2
    finally:
        shutdown_workers()
    _out(json.dumps({"skill": outcome.name, "status": outcome.status, "attempts": outcome.attempts,
                     "tests": outcome.report.to_dict(),
                     "approval": str(outcome.approval_path) if outcome.approval_path else None}))
    if outcome.approval_path is None:
        return 1
    import orjson

    _out(render_panel(home, orjson.loads(outcome.approval_path.read_bytes())))
    _out(f"approval requested: {outcome.approval_path}\nreview it with: luallm-agent skills resume "
         f"--home {shlex.quote(str(home.root))}")
    return 0


def _answers(args: argparse.Namespace) -> Any:
    if args.answer:
        yield from args.answer
        return
    for line in sys.stdin:
        yield line.strip()


def cmd_resume(args: argparse.Namespace) -> int:
    from agent.plans.pool import shutdown_workers
    from agent.skills.lifecycle import SkillLifecycle

    home = _home(args)
    audit = _audit(home)
    life = SkillLifecycle(home, audit=audit)
    status = 0
    answers = _answers(args)
    try:
        for path, approval in life.pending():
            name = approval["skill"]
            if life.promoted(approval):
                check = life.validate_promoted(path, approval)
                if check.ok:
                    _out(f"skill {name} v{approval['version']} validated in skills/allowed/: approved")
                else:
                    status = 1
                    _out(f"skill {name}: promoted copy not valid: " + "; ".join(check.problems))
                continue
            if approval.get("status") == "awaiting_promotion":
                _out(f"skill {name}: waiting for a person to run:")
                _out("\n".join(approval.get("promotion_commands") or []))
                continue
            status = max(status, _review(life, path, approval, answers, args))
    finally:
        shutdown_workers()
    return status


def _review(life: Any, path: Path, approval: dict[str, Any], answers: Any, args: argparse.Namespace) -> int:
    from agent.skills.panel import render_panel

    home = life.home
    _out(render_panel(home, approval))
    for raw in answers:
        choice = raw[:1].lower()
        if choice == "v":
            for key in ("skill", "test"):
                _out(Path(approval["files"][key]).read_text(encoding="utf-8", errors="replace"))
        elif choice == "r":
            life.retest(path, approval)
            _out(render_panel(home, approval))
        elif choice == "e":
            editor = os.environ.get("EDITOR") or "vi"
            subprocess.run([*shlex.split(editor), approval["files"]["skill"], approval["files"]["test"]], check=False)
            life.retest(path, approval)
            _out(render_panel(home, approval))
        elif choice == "f":
            try:
                life.model = _model(args, life.audit)
                life.fix(path, approval)
            except Exception as exc:  # the person sees why, the panel stays
                _err(f"fix failed: {exc}")
            _out(render_panel(home, approval))
        elif choice == "y":
            if (approval.get("tests") or {}).get("failed") or not (approval.get("tests") or {}).get("total"):
                _err("tests are not green: rerun or fix them before promoting")
                continue
            _out("Run these commands yourself to promote the skill (the agent does not run them):")
            _out("\n".join(life.decide(path, approval, True)))
            return 0
        elif choice == "n":
            life.decide(path, approval, False)
            _out(f"skill {approval['skill']}: rejected")
            return 0
        else:
            _out("choose one of v, r, e, f, y, n")
    return 0


def _common(p: argparse.ArgumentParser, top: bool) -> None:
    # On the subcommands too, without overwriting a value given before the subcommand.
    p.add_argument("--home", default=None if top else argparse.SUPPRESS,
                   help="agent home (env LUALLM_AGENT_HOME; default ~/.config/luallmagent)")


def add_parser(subparsers: Any) -> None:
    """Register `skills` and its subcommands (each sets `func(args) -> exit code`)."""
    skills = subparsers.add_parser("skills", help="Lua skills and Agent Skills: list, show, test, draft, resume")
    sub = skills.add_subparsers(dest="skills_command", required=True)
    p = sub.add_parser("list", help="name, version, source, last test status, description")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("test", help="run NAME's tests in the skill sandbox; prints the JSON result (exit 0/1/2)")
    p.add_argument("name")
    p.add_argument("--draft", action="store_true", help="test the draft in skills/agent/ even if a promoted copy exists")
    p.set_defaults(func=cmd_test)
    p = sub.add_parser("show", help="metadata and code of NAME (or an Agent Skill's SKILL.md)")
    p.add_argument("name")
    p.add_argument("--draft", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_show)
    p = sub.add_parser("samples", help="where the sample skills are and the commands to install them")
    p.set_defaults(func=cmd_samples)
    p = sub.add_parser("draft", help="have the model draft NAME from --spec, test and rework it, request approval")
    p.add_argument("name")
    p.add_argument("--spec", required=True)
    p.add_argument("--max-retries", type=int, default=None, help="reworks after the first draft (default: config, 3)")
    _model_options(p)
    p.set_defaults(func=cmd_draft)
    p = sub.add_parser("resume", help="review pending approvals; validate promoted skills")
    p.add_argument("--answer", action="append", help="panel choice(s) instead of reading stdin (v, r, e, f, y, n)")
    _model_options(p)
    p.set_defaults(func=cmd_resume)
    _common(skills, True)
    for parser in sub.choices.values():
        _common(parser, False)


def _model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model")
    p.add_argument("--base-url")
    p.add_argument("--config")
    p.add_argument("--replay", "--responses", dest="replay")
    p.add_argument("--record")
    p.add_argument("--scripted-replies", help=argparse.SUPPRESS)


def main(args: argparse.Namespace) -> int:
    return int(args.func(args))


if __name__ == "__main__":
    top = argparse.ArgumentParser(prog="luallm-agent")
    add_parser(top.add_subparsers(dest="command", required=True))
    sys.exit(main(top.parse_args()))
