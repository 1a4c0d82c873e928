"""Recognise a plan in a model reply: a ```lua fence, or a strict JSON action list (the minimal-harness format)."""

from __future__ import annotations

import json
from typing import Any

from agent.errors import PlanInvalid
from agent.fences import blocks

__all__ = ["find_lua_plan", "parse_action_list"]

_ACTION_LIST_KEYS = frozenset({"reasoning", "actions"})
_ACTION_KEYS = frozenset({"tool", "args"})


def find_lua_plan(text: str) -> str | None:
    """The Lua source of the reply's first ```lua fence (even without `run`, so that the pre-check
    can name what is missing), else None: the fence is how a reply says it is a plan."""
    if not isinstance(text, str):
        return None
    return next((str(b.body).strip("\n") for b in blocks(text, open_last=True) if b.lang == "lua"), None)


def parse_action_list(obj: Any) -> list[dict[str, Any]] | None:
    """The actions of `{"reasoning"?, "actions": [{"tool", "args"}]}`, None if `obj` is not one.

    An object counts as an action list when `actions` is a list whose items carry a `tool` (or
    the list is empty); then every rule is strict and a violation raises PlanInvalid.
    """
    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except ValueError:
            return None
    if not isinstance(obj, dict) or "actions" not in obj:
        return None
    actions = obj["actions"]
    if not isinstance(actions, list):
        raise PlanInvalid("action list: 'actions' must be an array", field="actions")
    if actions and not any(isinstance(a, dict) and "tool" in a for a in actions):
        return None
    extra = sorted(set(obj) - _ACTION_LIST_KEYS)
    if extra:
        raise PlanInvalid(f"action list: unexpected field '{extra[0]}' (allowed: reasoning, actions)",
                          field=extra[0])
    if "reasoning" in obj and not isinstance(obj["reasoning"], str):
        raise PlanInvalid("action list: 'reasoning' must be a string", field="reasoning")
    out: list[dict[str, Any]] = []
    for i, action in enumerate(actions):
        where = f"actions[{i}]"
        if not isinstance(action, dict):
            raise PlanInvalid(f"action list: {where} must be an object", index=i)
        extra = sorted(set(action) - _ACTION_KEYS)
        if extra:
            raise PlanInvalid(f"action list: {where} has unexpected field '{extra[0]}' (allowed: tool, args)",
                              index=i, field=extra[0])
        missing = sorted(_ACTION_KEYS - set(action))
        if missing:
            raise PlanInvalid(f"action list: {where} is missing '{missing[0]}'", index=i, field=missing[0])
        if not isinstance(action["tool"], str) or not action["tool"]:
            raise PlanInvalid(f"action list: {where}.tool must be a non-empty string", index=i)
        if not isinstance(action["args"], dict):
            raise PlanInvalid(f"action list: {where}.args must be an object", index=i)
        out.append({"tool": action["tool"], "args": action["args"]})
    return out
