"""`luallm-agent demo`: run the embedded demo on recorded model responses (offline)."""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from agent.cli.options import SettingsError
from agent.cli.parsing import add_command

__all__ = ["add_parser", "cmd_demo", "MARKER"]

MARKER = ".luallm-agent-demo"  # in a workspace the demo made; only such a directory is ever reset

DESCRIPTION = f"""\
Run the whole lorch loop offline on model responses recorded in the package: an intake with one
clarification round, then implement -> review (changes requested) -> implement_changes -> review
(approved) -> update_spec, one agent process per role, exactly as `replay` does. The demo works in
a fresh temporary directory whose path it prints, and never touches your files: --workspace must
be a new or empty directory, or one an earlier demo made (it holds {MARKER}; it is reset).
Exit code 0 when every command succeeded, 1 otherwise, 2 for a bad invocation."""

EXAMPLES = ["luallm-agent demo", "luallm-agent demo --workspace /tmp/luallm-demo --json"]


def add_parser(sub: Any) -> None:
    demo = add_command(sub, "demo", summary="run the embedded demo on recorded model responses (offline)",
                       description=DESCRIPTION, examples=EXAMPLES)
    demo.add_argument("--workspace", help="where to put the demo workspace: a new or empty directory, or an "
                                          "earlier demo's (default: a new temporary directory)")
    demo.add_argument("--json", action="store_true", help="print every message from the agents as one JSON line")
    demo.set_defaults(func=cmd_demo)


def prepare_workspace(requested: str | None) -> tuple[Path, str]:
    """A directory the demo may fill (and how it was chosen); refuses anything holding user files."""
    if requested is None:
        target = Path(tempfile.mkdtemp(prefix="luallm-demo-"))
        how = "a new temporary directory"
    else:
        target = Path(requested).resolve()
        if target.exists() and not target.is_dir():
            raise SettingsError(f"--workspace {requested} is a file, not a directory")
        if target.is_dir() and any(target.iterdir()):
            if not (target / MARKER).is_file():
                raise SettingsError(f"--workspace {requested} is not empty and not a workspace an earlier demo "
                                    "made: the demo never touches your files; give a new or empty directory, "
                                    "or no --workspace for a temporary one")
            _clear(target)
            how = "an earlier demo's workspace, reset"
        else:
            how = "the directory you named"
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SettingsError(f"--workspace {requested}: cannot create it: {exc.strerror or exc}") from None
    (target / MARKER).write_text("made by `luallm-agent demo`; a later `demo --workspace` here resets it\n")
    return target, how


def _clear(directory: Path) -> None:
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def cmd_demo(args: argparse.Namespace) -> int:
    from agent.cli.transcript import run_and_report
    from agent.conductor import agent_command, load_script
    from agent.resources import demo_dir

    target, how = prepare_workspace(args.workspace)
    demo = demo_dir()
    # pip byte-compiles the demo's .py files where it installs them: never copy the caches, they
    # would change the workspace the recorded prompts describe.
    shutil.copytree(demo / "workspace", target, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    script = load_script(demo / "commands.ndjson")
    # one builder round: the demo shows lorch's review loop, not the builder fixing its own test failure
    options = ["--replay", str(demo / "responses.jsonl"), "--builder-rounds", "1"]
    test_command = f"{shlex.quote(sys.executable)} -m unittest discover -s tests"
    notes = sys.stderr if args.json else sys.stdout
    notes.write(f"luallm-agent demo: workspace {target} ({how}); recorded model responses, no network\n\n")
    notes.flush()

    def argv(role: str) -> list[str]:
        return agent_command(role, str(target), options, test_command=test_command)

    code = run_and_report(script, argv, str(target), json_mode=args.json)
    notes.write(f"\nInspect it: ls -R {target}   (audit log: {target}/logs/luallm-agent/audit.jsonl)\n")
    return code
