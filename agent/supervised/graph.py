"""The task graph (seed 000 §5.1): parse the model's JSON, validate it, walk it.

A graph is `{"nodes": [...]}`; each node has `id`, `action` and `depends_on`, plus per action:

- `llm_call`: `prompt_template` (may use `{node_N_result}`), optional `model`, optional `writes`
  (one path: the reply is written there);
- `plan`: `source`, a Lua plan `function run(ctx) ... end` run in the sandbox with read-only tools;
  it returns its result, and `{files = {[path] = text}}` for files to write (each in `writes`);
- `skill`: `skill_name`, `skill_args` (object), `skill_source` `allowed` | `draft` (+ `skill_spec`);
- `decision`: `condition`, `if_true`, `if_false` (node ids; the branch not taken is skipped).

Nodes may declare `reads`, `writes` (paths) and `network` (URLs) for the approval tiers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from agent.errors import AgentError, TaskGraphInvalid
from agent.fences import blocks

__all__ = ["ACTIONS", "parse_graph", "validate_graph", "ready_nodes", "render_template", "ancestors",
           "skip_downstream", "decision_targets", "TEMPLATE_RE", "MAX_NODES"]

ACTIONS = ("skill", "llm_call", "decision", "plan")
MAX_NODES = 50
TEMPLATE_RE = re.compile(r"\{node_([A-Za-z0-9_.-]{1,40})_result\}")
_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")


def parse_graph(text: str) -> dict[str, Any]:
    """The JSON object in a model reply (bare, or in a ```json fence); TaskGraphInvalid otherwise."""
    candidates = [b.body for b in blocks(text) if b.lang in ("", "json")] + [text]
    for c in candidates:
        c = c.strip()
        start, end = c.find("{"), c.rfind("}")
        if start < 0 or end <= start:
            continue
        try:
            data = orjson.loads(c[start:end + 1])
        except orjson.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
    raise TaskGraphInvalid("the reply holds no JSON object; answer with one JSON object {\"nodes\": [...]}",
                           problems=["the reply holds no JSON object"])


def decision_targets(nodes: list[dict[str, Any]]) -> dict[str, str]:
    """target node id → the decision node that gates it."""
    out: dict[str, str] = {}
    for n in nodes:
        if n.get("action") == "decision":
            for key in ("if_true", "if_false"):
                if isinstance(n.get(key), str) and n[key]:
                    out[n[key]] = str(n["id"])
    return out


def _edges(nodes: list[dict[str, Any]]) -> dict[str, list[str]]:
    """node id → the ids it waits for (declared deps plus its gating decision)."""
    gates = decision_targets(nodes)
    deps: dict[str, list[str]] = {}
    for n in nodes:
        nid = str(n["id"])
        deps[nid] = [str(d) for d in n.get("depends_on") or []]
        if nid in gates and gates[nid] not in deps[nid]:
            deps[nid].append(gates[nid])
    return deps


def ancestors(nodes: list[dict[str, Any]], node_id: str) -> set[str]:
    deps = _edges(nodes)
    seen: set[str] = set()
    stack = list(deps.get(node_id, []))
    while stack:
        d = stack.pop()
        if d not in seen:
            seen.add(d)
            stack.extend(deps.get(d, []))
    return seen


def validate_graph(data: dict[str, Any], *, skill_exists: Callable[[str], bool],
                   check_path: Callable[[str, bool], None], max_retries: int) -> list[dict[str, Any]]:
    """Normalised nodes, or TaskGraphInvalid listing every problem (fed back to the model verbatim)."""
    problems: list[str] = []
    raw = data.get("nodes")
    if not isinstance(raw, list) or not raw:
        raise TaskGraphInvalid("graph invalid: `nodes` must be a non-empty list", problems=["`nodes` must be a "
                                                                                            "non-empty list"])
    if len(raw) > MAX_NODES:
        problems.append(f"{len(raw)} nodes; at most {MAX_NODES}")
    nodes: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, n in enumerate(raw[:MAX_NODES]):
        where = f"nodes[{i}]"
        if not isinstance(n, dict):
            problems.append(f"{where}: not an object")
            continue
        nid = n.get("id")
        if isinstance(nid, int) and not isinstance(nid, bool):
            nid = str(nid)
        if not isinstance(nid, str) or not _ID_RE.match(nid):
            problems.append(f"{where}: id must be a short string of letters, digits, _ . - (got {nid!r})")
            continue
        where = f"node {nid}"
        if nid in seen:
            problems.append(f"{where}: duplicate id")
            continue
        seen.add(nid)
        action = n.get("action")
        if action not in ACTIONS:
            problems.append(f"{where}: action must be one of {', '.join(ACTIONS)} (got {action!r})")
            continue
        deps = n.get("depends_on", [])
        if not isinstance(deps, list) or not all(isinstance(d, (str, int)) for d in deps):
            problems.append(f"{where}: depends_on must be a list of node ids")
            deps = []
        node = {**n, "id": nid, "depends_on": [str(d) for d in deps], "status": "pending", "retries": 0,
                "max_retries": max(1, min(int(n.get("max_retries") or max_retries), max_retries)),
                "result": None, "error": None, "effects": [], "elapsed_s": 0.0}
        problems += _action_problems(node, where, skill_exists)
        problems += _path_problems(node, where, check_path)
        if not isinstance(node.get("network", []), list):
            problems.append(f"{where}: network must be a list of URLs")
        nodes.append(node)
    problems += _link_problems(nodes, nodes_valid=not problems)
    if problems:
        raise TaskGraphInvalid(f"graph invalid: {'; '.join(problems[:10])}", problems=problems[:20])
    return nodes


def _path_problems(node: dict[str, Any], where: str, check_path: Callable[[str, bool], None]) -> list[str]:
    """A node's `reads` and `writes`: lists of paths the home's policy allows (a bad list is emptied)."""
    problems: list[str] = []
    for key, write in (("reads", False), ("writes", True)):
        paths = node.get(key, [])
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            problems.append(f"{where}: {key} must be a list of paths")
            node[key] = []
            continue
        for p in paths:
            try:
                check_path(p, write)
            except AgentError as exc:
                problems.append(f"{where}: {key} {p!r}: {exc.message}")
    return problems


def _link_problems(nodes: list[dict[str, Any]], *, nodes_valid: bool) -> list[str]:
    """Dependencies and decision branches between the well-formed nodes; then, only when nothing else
    is wrong (`nodes_valid`: every node passed its own checks), cycles and template references."""
    problems: list[str] = []
    ids = {n["id"] for n in nodes}
    for n in nodes:
        for d in n["depends_on"]:
            if d not in ids:
                problems.append(f"node {n['id']}: depends_on {d!r} is not a node id")
            elif d == n["id"]:
                problems.append(f"node {n['id']}: depends on itself")
        if n["action"] == "decision":
            for key in ("if_true", "if_false"):
                if n.get(key) not in ids or n.get(key) == n["id"]:
                    problems.append(f"node {n['id']}: {key} {n.get(key)!r} is not another node's id")
    if not problems and nodes_valid:
        cycle = _find_cycle(nodes)
        if cycle:
            problems.append(f"cycle: {' -> '.join(cycle)}")
    if not problems and nodes_valid:
        for n in nodes:
            refs = TEMPLATE_RE.findall(str(n.get("prompt_template") or "")) + TEMPLATE_RE.findall(
                str(n.get("condition") or ""))
            before = ancestors(nodes, n["id"])
            for r in refs:
                if r not in before:
                    problems.append(f"node {n['id']}: {{node_{r}_result}} names a node that does not run before it "
                                    "(add it to depends_on)")
    return problems


def _action_problems(node: dict[str, Any], where: str, skill_exists: Callable[[str], bool]) -> list[str]:
    action = node["action"]
    out: list[str] = []

    def need_str(key: str) -> None:
        if not isinstance(node.get(key), str) or not node[key].strip():
            out.append(f"{where}: {action} needs a non-empty string `{key}`")

    if action == "llm_call":
        need_str("prompt_template")
        if len(node.get("writes") or []) > 1:
            out.append(f"{where}: an llm_call writes at most one file (its reply)")
    elif action == "plan":
        need_str("source")
    elif action == "decision":
        need_str("condition")
    elif action == "skill":
        need_str("skill_name")
        if not isinstance(node.get("skill_args", {}), dict):
            out.append(f"{where}: skill_args must be an object")
        source = node.setdefault("skill_source", "allowed")
        if source not in ("allowed", "draft"):
            out.append(f"{where}: skill_source must be allowed or draft")
        elif isinstance(node.get("skill_name"), str) and source == "allowed" and not skill_exists(node["skill_name"]):
            out.append(f"{where}: skill {node['skill_name']!r} is not in skills/allowed/; use one that is, or set "
                       "skill_source to draft with a skill_spec")
        elif source == "draft" and not isinstance(node.get("skill_spec"), str):
            out.append(f"{where}: a draft skill needs `skill_spec` (what the skill must do)")
    return out


def _find_cycle(nodes: list[dict[str, Any]]) -> list[str] | None:
    deps = _edges(nodes)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for d in deps.get(n, []):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if state.get(d) is None and (found := visit(d)):
                return found
        state[n] = 2
        path.pop()
        return None

    for nid in deps:
        if state.get(nid) is None and (found := visit(nid)):
            return found
    return None


def ready_nodes(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pending nodes whose dependencies (and gating decision) are complete, in graph order."""
    status = {n["id"]: n["status"] for n in nodes}
    deps = _edges(nodes)
    return [n for n in nodes if n["status"] in ("pending", "running")
            and all(status.get(d) == "complete" for d in deps[n["id"]])]


def skip_downstream(nodes: list[dict[str, Any]], root: str, reason: str) -> list[str]:
    """Mark every node that (transitively) waits for `root` as skipped; returns their ids."""
    deps = _edges(nodes)
    skipped: list[str] = []
    changed = True
    blocked = {root}
    while changed:
        changed = False
        for n in nodes:
            if n["id"] not in blocked and any(d in blocked for d in deps[n["id"]]) and n["status"] == "pending":
                n["status"] = "skipped"
                n["error"] = reason
                blocked.add(n["id"])
                skipped.append(n["id"])
                changed = True
    return skipped


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def render_template(template: str, nodes: list[dict[str, Any]], budget: int) -> str:
    """Fill `{node_N_result}`; the substituted results share `budget` bytes, each cut with a marker."""
    results = {n["id"]: n.get("result") for n in nodes}
    refs = TEMPLATE_RE.findall(template)
    share = max(256, budget // max(1, len(refs)))

    def fill(m: re.Match[str]) -> str:
        text = _text(results.get(m.group(1)))
        raw = text.encode()
        if len(raw) <= share:
            return text
        return raw[:share].decode("utf-8", "ignore") + f"…[truncated: {len(raw)} bytes]"

    return TEMPLATE_RE.sub(fill, template)
