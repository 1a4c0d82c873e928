"""Command line: `luallm-agent stdio | replay | demo | plan | tools | schemas`.

Invalid settings are one line on stderr and exit code 2, before anything is written to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from agent import __version__
from agent.protocol import ROLES, SCHEMA_DIR

__all__ = ["main", "build_parser"]

EXIT_USAGE = 2


class SettingsError(Exception):
    """A setting that makes it impossible to start."""


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text}")
    return value


def add_agent_options(p: argparse.ArgumentParser) -> None:
    """Options shared by `stdio` (and passed through by `replay`/`demo`)."""
    p.add_argument("--workspace", help="workspace root (env LUALLM_AGENT_WORKSPACE; default: current directory)")
    p.add_argument("--model", help="model name (env LUALLM_AGENT_MODEL)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (env OPENAI_BASE_URL)")
    p.add_argument("--config", help="providers/routing config file (env LUALLM_AGENT_CONFIG)")
    p.add_argument("--replay", "--responses", dest="replay",
                   help="serve model replies from this recorded-responses JSONL; never touch the network")
    p.add_argument("--record", help="append every model exchange to this JSONL file")
    p.add_argument("--scripted-replies", help=argparse.SUPPRESS)  # fixture making: replies in order
    p.add_argument("--test-command", help="builder test command (env LUALLM_AGENT_TEST_COMMAND)")
    p.add_argument("--spec-path", help="spec file for the spec maintainer (env LUALLM_AGENT_SPEC_PATH)")
    p.add_argument("--heartbeat-interval", type=_positive_float, default=None,
                   help="seconds (env LUALLM_AGENT_HEARTBEAT_INTERVAL; default 10; keep it under a third of "
                        "lorch's heartbeat_interval_s x 3 silence limit)")
    p.add_argument("--max-line-bytes", type=_positive_int, default=256 * 1024,
                   help="input line cap in bytes (default 262144)")
    p.add_argument("--max-stdout-logs", type=int, default=20, help="log lines allowed on stdout (default 20)")
    p.add_argument("--prompt-budget", type=_positive_int, default=256 * 1024, help="total prompt file bytes")
    p.add_argument("--file-budget", type=_positive_int, default=32 * 1024, help="per-file prompt bytes")
    p.add_argument("--max-repairs", type=int, default=2, help="times an invalid answer is sent back (default 2)")
    p.add_argument("--answers", choices=("plan", "json"), default="plan",
                   help="plan: prefer Lua plans (default); json: ask for the JSON answer and send its schema "
                        "as response_format where the provider supports it")
    p.add_argument("--max-tokens", type=_positive_int, default=None,
                   help="max_tokens for every model request (default: per role, builder 3072, others 1024)")
    p.add_argument("--model-timeout", type=_positive_float, default=120.0,
                   help="seconds to connect and get the first byte of an answer, prompt processing included "
                        "(default 120; never past the command deadline)")
    p.add_argument("--model-stall-s", type=_positive_float, default=60.0,
                   help="seconds a streaming answer may go silent before it counts as stalled (default 60); "
                        "an answer that keeps streaming is bounded only by the command deadline")
    p.add_argument("--max-response-bytes", type=_positive_int, default=8 * 1024 * 1024,
                   help="cap on one model response body after decompression (default 8 MiB)")
    p.add_argument("--plan-run-allow", default="",
                   help="extra commands Lua plans may start with tools.run, comma-separated (e.g. python3,pytest)")
    p.add_argument("--plan-wall-s", type=_positive_float, default=30.0, help="plan wall-time limit (default 30)")
    p.add_argument("--plan-memory-mb", type=_positive_int, default=64, help="plan Lua memory limit (default 64)")
    p.add_argument("--skills-home", help="agent home whose promoted skills (skills/allowed/) plans may call as "
                                         "skills.NAME (env LUALLM_AGENT_SKILLS_HOME; default: off)")
    p.add_argument("--keep-serving-on-failure", action="store_true",
                   help="reviewer/spec_maintainer: do not exit non-zero after an unrecoverable failure")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="luallm-agent", description=__doc__)
    parser.add_argument("--version", action="version", version=f"luallm-agent {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    stdio = sub.add_parser("stdio", help="serve NDJSON commands on stdin (what lorch spawns)")
    stdio.add_argument("--role", help=f"one of {', '.join(ROLES)} (env AGENT_TYPE)")
    add_agent_options(stdio)
    stdio.set_defaults(func=cmd_stdio)

    replay = sub.add_parser("replay", help="drive agents through a command script, like lorch, and print the transcript")
    replay.add_argument("commands", help="NDJSON file of commands")
    replay.add_argument("--scripted-dir", help=argparse.SUPPRESS)
    replay.add_argument("--json", action="store_true", help="print every message as JSON instead of a transcript")
    add_agent_options(replay)
    replay.set_defaults(func=cmd_replay)

    demo = sub.add_parser("demo", help="run the embedded demo on recorded model responses (offline)")
    demo.add_argument("--workspace", help="where to put the demo workspace (default: a new temp directory)")
    demo.add_argument("--json", action="store_true", help="print every message as JSON")
    demo.set_defaults(func=cmd_demo)

    schemas = sub.add_parser("schemas", help="print the path of the wire-contract JSON Schemas")
    schemas.set_defaults(func=lambda _a: print(SCHEMA_DIR) or 0)

    from agent.skills.cli import add_parser as add_skills_parser
    from agent.supervised.cli import add_parsers as add_supervised_parsers

    add_skills_parser(sub)
    add_supervised_parsers(sub)  # init, doctor, run, stop, log
    try:
        from agent.plans.cli import add_plan_parser
    except ImportError:  # the plan runtime is optional for the stdio spine
        pass
    else:
        add_plan_parser(sub)
    return parser


def _settings_from(args: argparse.Namespace, role: str):  # type: ignore[no-untyped-def]
    from agent.models.base import ModelClient, ModelSettings
    from agent.prompt import PromptBudget
    from agent.roles.context import RoleSettings
    from agent.runtime import AgentConfig

    ws = args.workspace or _env("LUALLM_AGENT_WORKSPACE") or os.getcwd()
    if not Path(ws).is_dir():
        raise SettingsError(f"workspace does not exist or is not a directory: {ws}")
    models = ModelSettings(
        model=args.model or _env("LUALLM_AGENT_MODEL"), base_url=args.base_url or _env("OPENAI_BASE_URL"),
        api_key=_env("OPENAI_API_KEY"), config_path=args.config or _env("LUALLM_AGENT_CONFIG"),
        responses_path=args.replay or _env("LUALLM_AGENT_REPLAY"), record_path=args.record,
        timeout_s=args.model_timeout, stall_s=args.model_stall_s, max_response_bytes=args.max_response_bytes)
    for label, path in (("config file", models.config_path), ("recorded responses file", models.responses_path),
                        ("scripted replies file", args.scripted_replies)):
        if path and not Path(path).is_file():
            raise SettingsError(f"{label} not found: {path}")
    if models.config_path and not models.responses_path:
        try:
            from agent.models.config import load_config
        except ImportError:
            pass
        else:
            try:
                load_config(models.config_path)
            except Exception as exc:
                raise SettingsError(f"invalid config {models.config_path}: {exc}") from exc
    client: ModelClient | None = None
    redactor = None
    if args.scripted_replies:
        from agent.models.scripted import ScriptedModel

        client = ScriptedModel.from_file(args.scripted_replies)
        if args.record:
            from agent.models.recorder import RecordingModel
            from agent.redact import Redactor

            redactor = Redactor()  # the agent's own: it learns each command's input secrets
            client = RecordingModel(client, args.record, redactor)
    from agent.plans.limits import PlanLimits

    extra_allow = tuple(c.strip() for c in args.plan_run_allow.split(",") if c.strip())
    limits = PlanLimits(wall_s=args.plan_wall_s, memory_bytes=args.plan_memory_mb * 1024 * 1024,
                        run_allow=(*PlanLimits().run_allow, *extra_allow),
                        skills_home=args.skills_home or _env("LUALLM_AGENT_SKILLS_HOME"))
    roles = RoleSettings(
        test_command=args.test_command or _env("LUALLM_AGENT_TEST_COMMAND"),
        spec_path=args.spec_path or _env("LUALLM_AGENT_SPEC_PATH"),
        budget=PromptBudget(args.prompt_budget, args.file_budget), max_repairs=max(0, args.max_repairs),
        prefer_plans=args.answers == "plan", plan_limits=limits, max_tokens=args.max_tokens)
    interval = args.heartbeat_interval
    if interval is None:
        raw = _env("LUALLM_AGENT_HEARTBEAT_INTERVAL") or "10"
        try:
            interval = _positive_float(raw)
        except (ValueError, argparse.ArgumentTypeError) as exc:
            raise SettingsError(f"LUALLM_AGENT_HEARTBEAT_INTERVAL must be a number > 0, got {raw!r}") from exc
    return AgentConfig(role=role, workspace=Path(ws), heartbeat_interval=interval,
                       max_input_line=args.max_line_bytes, max_stdout_logs=max(0, args.max_stdout_logs),
                       exit_on_unrecoverable=not args.keep_serving_on_failure, models=models, roles=roles,
                       model_client=client, redactor=redactor)


def cmd_stdio(args: argparse.Namespace) -> int:
    role = args.role or _env("AGENT_TYPE")
    if role not in ROLES:
        raise SettingsError(f"unknown or missing role {role!r}: use --role or AGENT_TYPE with one of {', '.join(ROLES)}")
    config = _settings_from(args, role)
    # stdout belongs to the protocol writer alone: keep a private handle to it and point fd 1
    # (and sys.stdout) at stderr, so a stray print or a C library cannot corrupt the stream.
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from agent.runtime import Agent

    return Agent(config, sys.stdin.buffer, protocol_out).serve()


def cmd_replay(args: argparse.Namespace) -> int:
    from agent.conductor import run_script

    if not Path(args.commands).is_file():
        raise SettingsError(f"commands file not found: {args.commands}")
    ws = args.workspace or os.getcwd()
    if not Path(ws).is_dir():
        raise SettingsError(f"workspace does not exist or is not a directory: {ws}")
    return run_script(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from agent.conductor import run_demo

    return run_demo(args)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SettingsError as exc:
        sys.stderr.write(f"luallm-agent: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
