"""`luallm-agent approvals list | approve ID | reject ID`: a person answers one request by id.

For a person without a terminal on the task (a CI job paused, a remote box): the pause printed
each request's id; `approve`/`reject` records the answer in its file and `run --resume` applies
it. Exit codes: 0 done, 2 bad id or a request that cannot be answered here (skill promotion).
Parsing and answering live here; `supervised.cli` registers it and owns stdout.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["add_parser"]


def add_parser(sub: Any, func: Any) -> None:
    def home_opt(parser: argparse.ArgumentParser, top: bool) -> None:
        # On the actions too, without overwriting a value given before the action.
        parser.add_argument("--home", default=None if top else argparse.SUPPRESS,
                            help="agent home (env LUALLM_AGENT_HOME; default ~/.config/luallmagent)")

    p = sub.add_parser("approvals", help="list pending approvals; approve ID / reject ID answers one of them")
    home_opt(p, True)
    inner = p.add_subparsers(dest="approvals_command", required=True, metavar="ACTION")
    q = inner.add_parser("list", help="what waits for a person, with each request's id")
    home_opt(q, False)
    q.add_argument("--json", action="store_true", help="one JSON array")
    for name, text in (("approve", "approve request ID (then: luallm-agent run --resume)"),
                       ("reject", "reject request ID (then: luallm-agent run --resume)")):
        q = inner.add_parser(name, help=text)
        home_opt(q, False)
        q.add_argument("request_id", metavar="ID")
    p.set_defaults(func=func, supervised="approvals")


def run(home: Any, args: argparse.Namespace, audit_for: Any, _out: Any) -> int:
    """`_out` prints one line (the CLI module owns stdout)."""
    from agent.supervised.approval_files import answer, find, requests

    if args.approvals_command == "list":
        found = requests(home)
        if args.json:
            _out(json.dumps([r.to_dict() for r in found]))
            return 0
        if not found:
            _out("no pending approvals")
        for r in found:
            state = "waiting" if r.waiting else f"answered {r.answer}; applied by `luallm-agent run --resume`"
            _out(f"{r.id}\n  [{r.tier}] {r.summary}\n  task {r.task_id or '-'}; {state}")
        return 0
    yes = args.approvals_command == "approve"
    request = find(home, args.request_id)
    answer(home, request, yes)
    config = _config_or_none(home)
    if config is not None:
        audit_for(home, config, request.task_id).record("approval_answered", request_id=request.id,
                                                        tier=request.tier, decision="approved" if yes else "denied",
                                                        by=f"luallm-agent approvals {args.approvals_command}")
    if request.tier == "skill_promotion":
        _out(f"{request.id}: skill promotion rejected")
    else:
        _out(f"{request.id}: {'approved' if yes else 'rejected'}; continue the task with: "
             f"luallm-agent run --resume --home {home.root}")
    return 0


def _config_or_none(home: Any) -> Any:
    from agent.errors import AgentError

    try:
        return home.config()
    except AgentError:
        return None
