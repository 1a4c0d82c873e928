"""`luallm-agent plan` and `luallm-agent tools`: run one plan directly, print its graph, list tools.

These commands (and only these) print to stdout. Also runnable as `python -m agent.plans.cli`.
Error messages are bounded (`errors.bound_text`) and everything printed passes the redactor, which
also knows the values under secret-named keys of `--input`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agent.errors import bound_text
from agent.redact import Redactor

__all__ = ["add_plan_parser", "main", "ROLES"]

ROLES = ("builder", "reviewer", "spec_maintainer", "orchestration")


def _print_json(obj: Any, redactor: Redactor | None = None) -> None:
    sys.stdout.write(json.dumps((redactor or Redactor()).data(obj), ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def _fail(code: str, message: str, status: int = 1, redactor: Redactor | None = None) -> int:
    sys.stderr.write(f"{code}: {(redactor or Redactor()).text(bound_text(message))}\n")
    return status


def _validate_role(role: str, result: Any) -> str | None:
    """An error message if `result` breaks the role's answer schema; None if valid."""
    import jsonschema

    from agent.resources import schema_dir

    path = schema_dir() / "answers" / f"{role}.json"

    schema = json.loads(path.read_text(encoding="utf-8"))
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(result), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(p) for p in first.absolute_path) or "(root)"
    return f"result does not match the {role} answer schema at {where}: {first.message}"


def cmd_plan(args: argparse.Namespace) -> int:
    """Run a plan file (or print a run record's graph with --graph)."""
    from agent.errors import AgentError
    from agent.plans import (
        PlanLimits,
        find_lua_plan,
        parse_action_list,
        record_to_dot,
        run_actions,
        run_plan,
        shutdown_workers,
    )
    from agent.redact import Redactor
    from agent.workspace import Workspace

    if args.graph:
        try:
            record = json.loads(Path(args.graph).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return _fail("invalid_command", f"cannot read run record {args.graph}: {exc}", 2)
        if not isinstance(record, dict) or not isinstance(record.get("tool_calls", []), list):
            return _fail("invalid_command", f"{args.graph} is not a plan run record (a JSON object with "
                                            "tool_calls, as written to logs/luallm-agent/plans/)", 2)
        try:
            dot = record_to_dot(record)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            return _fail("invalid_command", f"{args.graph} is not a valid plan run record: {exc}", 2)
        sys.stdout.write(dot)
        return 0
    if not args.file:
        return _fail("invalid_command", "plan: FILE or --graph is required", 2)
    redactor = Redactor()
    try:
        text = Path(args.file).read_text(encoding="utf-8")
        workspace = Workspace(args.workspace, secret_values=Redactor().values())  # env secrets, as in stdio
        inputs = json.loads(args.input) if args.input else {}
        redactor.harvest(inputs)
    except (OSError, ValueError, RecursionError) as exc:
        return _fail("invalid_command", str(exc), 2, redactor)
    except AgentError as exc:
        return _fail(exc.code, exc.message, 2, redactor)
    limits = PlanLimits()
    if args.wall_s is not None:
        limits.wall_s = args.wall_s
    limits.skills_home = args.skills_home
    context = {"action": "plan", "inputs": inputs, "task_id": None, "role": args.role}
    try:
        actions = None
        if text.lstrip().startswith("{"):
            try:
                actions = parse_action_list(json.loads(text))
            except ValueError:
                actions = None
        if actions is not None:
            outcome = run_actions(actions, workspace=workspace, limits=limits)
        else:
            source = find_lua_plan(text) or text
            outcome = run_plan(source, context, workspace=workspace, limits=limits)
    except AgentError as exc:
        return _fail(exc.code, exc.message, 1, redactor)
    finally:
        shutdown_workers()
    if args.role:
        problem = _validate_role(args.role, outcome.result)
        if problem:
            return _fail("plan_runtime_error", problem, 1, redactor)
    _print_json({"output": outcome.output, "result": outcome.result, "output_truncated": outcome.output_truncated,
                 "artifacts": [a.to_dict() for a in outcome.artifacts], "record": outcome.record_path}, redactor)
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    """Print the tool registry (JSON with --json, else the prompt text)."""
    from agent.plans import tools_catalog, tools_prompt_text

    if args.json:
        _print_json(tools_catalog())
    else:
        sys.stdout.write(tools_prompt_text() + "\n")
    return 0


_PLAN_DESCRIPTION = """\
Run one Lua plan (or a strict JSON action list) in the same sandbox the agent uses, against a
workspace, and print {"output", "result", "output_truncated", "artifacts", "record"} as JSON. The
plan defines `function run(context)`; --input becomes context.inputs. With --role the result is
checked against that role's answer schema. With --graph, print the tool-call graph of a recorded
plan run (logs/luallm-agent/plans/<run_id>.json) as Graphviz DOT instead. Exit code 0 on success,
1 when the plan fails (`<code>: <message>` on stderr), 2 for a bad invocation."""

_TOOLS_DESCRIPTION = """\
List the tools a Lua plan can call (tools.read, tools.write, tools.run, ...) with their
parameters and descriptions: the same text every prompt carries, or a JSON catalog with --json."""


def add_plan_parser(subparsers: Any) -> None:
    """Register the `plan` and `tools` subcommands (each sets `func(args) -> exit code`)."""
    from agent.cli.parsing import add_command, float_in

    plan = add_command(subparsers, "plan", summary="run one Lua plan (or strict action list) in the sandbox",
                       description=_PLAN_DESCRIPTION,
                       examples=["luallm-agent plan plan.lua --workspace ws --input '{\"goal\": \"x\"}'",
                                 "luallm-agent plan answer.lua --workspace ws --role reviewer",
                                 "luallm-agent plan --graph ws/logs/luallm-agent/plans/RUN_ID.json | dot -Tsvg > run.svg"])
    plan.add_argument("file", nargs="?", help="Lua plan (or a model reply containing a ```lua fence)")
    plan.add_argument("--workspace", default=".", help="workspace root")
    plan.add_argument("--input", help="JSON value passed as context.inputs")
    plan.add_argument("--role", choices=ROLES, help="validate the result against that role's answer schema")
    plan.add_argument("--graph", metavar="RUN_RECORD_JSON", help="print the DOT graph of a run record")
    plan.add_argument("--wall-s", type=float_in(0, 3600), default=None, metavar="SECONDS",
                      help="wall-time limit in seconds (default: 30)")
    plan.add_argument("--skills-home", metavar="DIR",
                      help="agent home whose promoted skills the plan may call as skills.NAME")
    plan.set_defaults(func=cmd_plan)
    tools = add_command(subparsers, "tools", summary="list the tools plans can call", description=_TOOLS_DESCRIPTION,
                        examples=["luallm-agent tools", "luallm-agent tools --json"])
    tools.add_argument("--json", action="store_true", help="machine-readable catalog")
    tools.set_defaults(func=cmd_tools)


def main(argv: list[str] | None = None) -> int:
    from agent.cli.parsing import Parser

    parser = Parser(prog="luallm-agent")
    sub = parser.add_subparsers(dest="command", required=True)
    add_plan_parser(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
