"""Agent options shared by `stdio`, `replay` and `demo`, and the settings built from them.

`add_agent_options` is the one place where agent flags are declared; `settings_from` turns
them (and their environment variables) into an `AgentConfig`, checking every file and value at
start and raising `SettingsError` (one line, exit 2) for anything that would only fail later.
`agent_option_argv` turns the parsed options back into arguments, so `replay` passes every
agent flag through to the agents it starts, including flags added later.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from agent.answering.strategies import STRATEGIES, unknown_names
from agent.cli.parsing import float_in, int_in

__all__ = ["SettingsError", "add_agent_options", "settings_from", "env", "startup_warnings",
           "agent_option_argv", "check_base_url"]

MAX_SECONDS = 3600.0


class SettingsError(Exception):
    """A setting that makes it impossible to start."""


def env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None


def add_agent_options(p: argparse.ArgumentParser) -> None:
    """Options shared by `stdio` (and passed through by `replay`)."""
    g = p.add_argument_group("agent options (also settable from the environment where named)")
    g.add_argument("--workspace", metavar="DIR", help="workspace root (env LUALLM_AGENT_WORKSPACE; default: current directory)")
    g.add_argument("--model", help="model id the server expects, e.g. qwen2.5-coder:7b for Ollama "
                                   "(env LUALLM_AGENT_MODEL)")
    g.add_argument("--base-url", metavar="URL", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (env OPENAI_BASE_URL; "
                                      "API key from OPENAI_API_KEY)")
    g.add_argument("--config", metavar="FILE", help="providers/routing config file (env LUALLM_AGENT_CONFIG)")
    g.add_argument("--replay", "--responses", dest="replay", metavar="FILE",
                   help="serve model replies from this recorded-responses JSONL; never touch the network "
                        "(env LUALLM_AGENT_REPLAY)")
    g.add_argument("--record", metavar="FILE",
                   help="append every model exchange to this JSONL file (its directory must exist)")
    g.add_argument("--scripted-replies", help=argparse.SUPPRESS)  # fixture making: replies in order
    g.add_argument("--test-command", metavar="COMMAND", help="builder test command (env LUALLM_AGENT_TEST_COMMAND)")
    g.add_argument("--spec-path", metavar="FILE", help="spec file for the spec maintainer (env LUALLM_AGENT_SPEC_PATH)")
    g.add_argument("--heartbeat-interval", type=float_in(0, MAX_SECONDS), default=None, metavar="SECONDS",
                   help="seconds between heartbeats (env LUALLM_AGENT_HEARTBEAT_INTERVAL; default: 10); keep it "
                        "under lorch's heartbeat_interval_s: lorch gives up after 3 silent intervals")
    g.add_argument("--max-line-bytes", type=int_in(1024, 64 * 1024 * 1024), default=256 * 1024,
                   metavar="BYTES",
                   help="input line cap in bytes; longer lines are answered with message_too_large")
    g.add_argument("--max-stdout-logs", type=int_in(0, 49), default=20,
                   metavar="N",
                   help="log lines allowed on stdout per process (lorch stops reading after 50 unread logs)")
    g.add_argument("--prompt-budget", type=int_in(1024, 64 * 1024 * 1024), default=256 * 1024,
                   metavar="BYTES",
                   help="total bytes of file content quoted in one prompt")
    g.add_argument("--file-budget", type=int_in(256, 64 * 1024 * 1024), default=32 * 1024,
                   metavar="BYTES",
                   help="bytes of one file quoted in a prompt (longer files are summarised)")
    g.add_argument("--max-repairs", type=int_in(0, 10), default=2,
                   metavar="N",
                   help="times an invalid answer is sent back to the model with the error")
    g.add_argument("--answers", choices=("auto", "text", "lua", "plan", "grammar", "json"), default="auto",
                   help="the builder always writes files as text in test-driven rounds: as Lua long strings, "
                        "tools.write(path, [==[...]==]) (read, not run), with lua, plan or grammar, else fenced "
                        "(auto: as the provider's config or notes say). The other roles: auto: per model and server "
                        "(the JSON answer with its schema as response_format; a grammar-constrained Lua plan where "
                        "the provider's config or notes say answers: grammar); plan: prefer Lua plans; grammar: Lua "
                        "plans held to the plan grammar where the server takes a GBNF grammar (else free plans); "
                        "json: the JSON answer with its schema as response_format")
    g.add_argument("--max-review-rounds", type=int_in(1, 1000), default=4, metavar="N",
                   help="review rounds on one task before the reviewer ends lorch's review loop")
    g.add_argument("--max-spec-rounds", type=int_in(1, 1000), default=4, metavar="N",
                   help="update_spec rounds on one task before the spec maintainer ends the loop")
    g.add_argument("--builder-rounds", type=int_in(1, 20), default=6, metavar="N",
                   help="builder: rounds of write files, run the tests, read the failures "
                        "(the command's deadline ends them sooner)")
    g.add_argument("--disable-repair", action="append", default=[], metavar="NAME",
                   help="switch off one named repair or fallback (repeatable; `luallm-agent repairs` lists them; "
                        "also LUALLM_AGENT_DISABLE_REPAIRS=a,b)")
    g.add_argument("--max-tokens", type=int_in(1, 10_000_000), default=None,
                   metavar="N",
                   help="max_tokens for every model request (default: per role, builder 3072, others 1024)")
    g.add_argument("--model-timeout", type=float_in(0, MAX_SECONDS), default=120.0, metavar="SECONDS",
                   help="seconds to connect and get the first byte of an answer, prompt processing included "
                        "(never past the command deadline)")
    g.add_argument("--model-stall-s", type=float_in(0, MAX_SECONDS), default=60.0, metavar="SECONDS",
                   help="seconds a streaming answer may go silent before it counts as stalled; an answer that "
                        "keeps streaming is bounded only by the command deadline")
    g.add_argument("--max-response-bytes", type=int_in(1024, 1024 * 1024 * 1024), default=8 * 1024 * 1024,
                   metavar="BYTES", help="cap on one model reply: a body after decompression, or a streamed reply's text")
    g.add_argument("--plan-run-allow", default="", metavar="CMD,CMD",
                   help="extra commands Lua plans may start with tools.run, comma-separated (e.g. python3,pytest)")
    g.add_argument("--plan-wall-s", type=float_in(0, MAX_SECONDS), default=30.0, metavar="SECONDS",
                   help="plan wall-time limit")
    g.add_argument("--plan-memory-mb", type=int_in(8, 65536), default=64, metavar="MB",
                   help="plan Lua memory limit in MB")
    g.add_argument("--unsandboxed-commands", action="store_true",
                   help="where no OS sandbox exists (see `luallm-agent sandbox`), run tools.run and the test "
                        "command without one instead of refusing them (env LUALLM_AGENT_UNSANDBOXED_COMMANDS=1)")
    g.add_argument("--skills-home", metavar="DIR",
                   help="agent home whose promoted skills (skills/allowed/) plans may call as skills.NAME "
                        "(env LUALLM_AGENT_SKILLS_HOME; default: off)")
    g.add_argument("--keep-serving-on-failure", action="store_true",
                   help="reviewer/spec_maintainer: do not exit non-zero after an unrecoverable failure")


# Options `replay` sets per agent itself instead of passing them through.
_NOT_PASSED = {"workspace", "scripted_replies", "heartbeat_interval", "keep_serving_on_failure", "help"}


def agent_option_argv(args: argparse.Namespace) -> list[str]:
    """The agent options in `args` that differ from their defaults, as command-line arguments."""
    probe = argparse.ArgumentParser(add_help=False)
    add_agent_options(probe)
    argv: list[str] = []
    for action in probe._actions:
        if action.dest in _NOT_PASSED or not action.option_strings:
            continue
        value = getattr(args, action.dest, action.default)
        if value is None or value == action.default:
            continue
        flag = action.option_strings[0]
        if isinstance(value, list):  # a repeatable option (action="append")
            argv += [a for v in value for a in (flag, str(v))]
            continue
        argv += [flag] if action.nargs == 0 else [flag, str(value)]  # nargs 0: a switch (store_true)
    return argv


_COMMAND_NAME = re.compile(r"^[A-Za-z0-9._+-]+$")


def check_base_url(url: str, label: str) -> None:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise SettingsError(f"{label} must be an http(s) URL such as http://127.0.0.1:8080/v1, got {url!r}")


def _check_input_file(path: str, label: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise SettingsError(f"{label} not found: {path}")
    if not p.is_file():
        raise SettingsError(f"{label} is not a regular file: {path}")
    return p


def _check_record_path(path: str, label: str = "--record") -> None:
    """The recording is appended to; its directory must already exist (it is never created)."""
    p = Path(path)
    if p.exists() and not p.is_file():
        raise SettingsError(f"{label} is not a regular file: {path}")
    if not p.parent.is_dir():
        raise SettingsError(f"{label}: directory does not exist: {p.parent} (it is never created)")
    if not os.access(p.parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise SettingsError(f"{label}: not writable: {path}")


def _check_models(args: argparse.Namespace, models: Any) -> None:
    if models.base_url:
        check_base_url(models.base_url, "--base-url" if args.base_url else "OPENAI_BASE_URL")
    if models.config_path:
        _check_input_file(models.config_path, "--config file" if args.config else "LUALLM_AGENT_CONFIG file")
    if models.responses_path:
        label = "--replay file" if args.replay else "LUALLM_AGENT_REPLAY file"
        _check_input_file(models.responses_path, label)
        from agent.models.recorded import load_recordings

        try:
            load_recordings(models.responses_path)
        except (OSError, ValueError) as exc:
            raise SettingsError(f"{label} is not a recorded-responses JSONL file: {exc}") from None
    if models.record_path:
        _check_record_path(models.record_path)
        if models.responses_path and Path(models.record_path).resolve() == Path(models.responses_path).resolve():
            raise SettingsError("--record and --replay name the same file: a replay would append to its own source")
    if models.config_path and not models.responses_path:
        from agent.models.config import load_config

        try:
            load_config(models.config_path)
        except Exception as exc:
            raise SettingsError(f"invalid config {models.config_path}: {exc}") from None


def startup_warnings(args: argparse.Namespace) -> list[str]:
    """Settings that are legal but probably not what the person meant (no model at all, half of one)."""
    model = args.model or env("LUALLM_AGENT_MODEL")
    base_url = args.base_url or env("OPENAI_BASE_URL")
    if args.replay or env("LUALLM_AGENT_REPLAY") or args.config or env("LUALLM_AGENT_CONFIG") or args.scripted_replies:
        return []
    url_label = "--base-url" if args.base_url else "OPENAI_BASE_URL"
    model_label = "--model" if args.model else "LUALLM_AGENT_MODEL"
    if base_url and not model:
        return [f"{url_label} {base_url} is set but no model id: set --model (or LUALLM_AGENT_MODEL) to the id the "
                "server expects; until then no model is configured and every command that needs one fails "
                "with model_not_configured"]
    if model and not base_url:
        return [f"{model_label} {model} is set but no endpoint: set --base-url (or OPENAI_BASE_URL); until then no "
                "model is configured and every command that needs one fails with model_not_configured"]
    if not model:
        return ["no model configured: every command that needs a model will fail with model_not_configured; "
                "set --model and --base-url (or LUALLM_AGENT_MODEL and OPENAI_BASE_URL), --config FILE, "
                "or --replay FILE"]
    return []


def _disabled_repairs(args: argparse.Namespace, config_path: str | None) -> frozenset[str]:
    """The repairs switched off: --disable-repair, LUALLM_AGENT_DISABLE_REPAIRS and the config's `disable_repairs`."""
    sources = [("--disable-repair", list(args.disable_repair)),
               ("LUALLM_AGENT_DISABLE_REPAIRS",
                [n.strip() for n in (env("LUALLM_AGENT_DISABLE_REPAIRS") or "").split(",") if n.strip()])]
    if config_path:
        from agent.models.config import ConfigError, load_config  # pydantic: only when there is a config

        try:  # a config that does not load is reported where the models are built, as before
            sources.append((f"disable_repairs in {config_path}", list(load_config(config_path).disable_repairs)))
        except ConfigError:
            pass
    for label, names in sources:
        unknown = unknown_names(frozenset(names))
        if unknown:
            raise SettingsError(f"{label}: no repair named {', '.join(unknown)}; the names: {', '.join(STRATEGIES)}")
    return frozenset(n for _, names in sources for n in names)


def settings_from(args: argparse.Namespace, role: str):  # type: ignore[no-untyped-def]
    from agent.command_context import RoleSettings
    from agent.models.base import ModelClient, ModelSettings
    from agent.prompt import PromptBudget
    from agent.runtime import AgentConfig

    ws = args.workspace or env("LUALLM_AGENT_WORKSPACE") or os.getcwd()
    if not Path(ws).is_dir():
        raise SettingsError(f"workspace does not exist or is not a directory: {ws}")
    models = ModelSettings(
        model=args.model or env("LUALLM_AGENT_MODEL"), base_url=args.base_url or env("OPENAI_BASE_URL"),
        api_key=env("OPENAI_API_KEY"), config_path=args.config or env("LUALLM_AGENT_CONFIG"),
        responses_path=args.replay or env("LUALLM_AGENT_REPLAY"), record_path=args.record,
        timeout_s=args.model_timeout, stall_s=args.model_stall_s, max_response_bytes=args.max_response_bytes)
    _check_models(args, models)
    client: ModelClient | None = None
    redactor = None
    if args.scripted_replies:
        from agent.models.scripted import ScriptedModel

        _check_input_file(args.scripted_replies, "scripted replies file")
        try:
            client = ScriptedModel.from_file(args.scripted_replies)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SettingsError(f"invalid scripted replies file {args.scripted_replies}: {exc}") from None
        if args.record:
            from agent.models.recorder import RecordingModel
            from agent.redact import Redactor

            redactor = Redactor()  # the agent's own: it learns each command's input secrets
            client = RecordingModel(client, args.record, redactor)
    if args.unsandboxed_commands:
        from agent.sandbox import configure

        configure(unsandboxed_commands=True)
    from agent.plans.limits import PlanLimits

    extra_allow = tuple(c.strip() for c in args.plan_run_allow.split(",") if c.strip())
    for name in extra_allow:
        if not _COMMAND_NAME.match(name):
            raise SettingsError(f"--plan-run-allow takes command names like python3,pytest; got {name!r}")
    limits = PlanLimits(wall_s=args.plan_wall_s, memory_bytes=args.plan_memory_mb * 1024 * 1024,
                        run_allow=(*PlanLimits().run_allow, *extra_allow),
                        skills_home=args.skills_home or env("LUALLM_AGENT_SKILLS_HOME"))
    disabled = _disabled_repairs(args, models.config_path)
    roles = RoleSettings(
        test_command=args.test_command or env("LUALLM_AGENT_TEST_COMMAND"),
        spec_path=args.spec_path or env("LUALLM_AGENT_SPEC_PATH"),
        budget=PromptBudget(args.prompt_budget, args.file_budget), max_repairs=args.max_repairs,
        answers=args.answers, plan_limits=limits, max_tokens=args.max_tokens,
        max_review_rounds=args.max_review_rounds, max_spec_rounds=args.max_spec_rounds,
        builder_rounds=args.builder_rounds, disabled_repairs=disabled)
    interval = args.heartbeat_interval
    if interval is None:
        raw = env("LUALLM_AGENT_HEARTBEAT_INTERVAL") or "10"
        try:
            interval = float_in(0, MAX_SECONDS)(raw)
        except argparse.ArgumentTypeError as exc:
            raise SettingsError(f"LUALLM_AGENT_HEARTBEAT_INTERVAL {exc}") from None
    return AgentConfig(role=role, workspace=Path(ws), heartbeat_interval=interval,
                       max_input_line=args.max_line_bytes, max_stdout_logs=args.max_stdout_logs,
                       exit_on_unrecoverable=not args.keep_serving_on_failure, models=models, roles=roles,
                       model_client=client, redactor=redactor)
