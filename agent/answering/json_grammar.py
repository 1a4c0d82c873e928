"""A GBNF grammar for a role's JSON answer in which every edit copies a file the prompt quoted.

Why: held only by its schema (`response_format`), a small model's edit may quote text that is not
in the file (the worked example's, or a misremembered signature), and the edit cannot apply.

Where the server takes a GBNF grammar (llama.cpp), the JSON answer is held by this grammar instead:
the same JSON the schema allows (keys in llama.cpp's own order for `response_format`: the required
ones in the schema's order, then the optional ones, each skippable), except that an `edits` item
names one of the quoted files and its `old` text is an exact, unique run of that file's lines
(agent/plans/edit_anchors.py). The schema validator stays the final word.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from agent.plans.edit_anchors import JSON_FORMS, anchored_text, is_edit_item
from agent.plans.gbnf import Rules, lit, members_in_order

__all__ = ["json_answer_grammar"]

_WS = 24          # whitespace characters between two tokens
_NUMBER_DIGITS = 16


def _string(g: Rules, min_len: int = 0, max_len: int | None = None) -> str:
    bounds = f"{{{min_len},{max_len}}}" if max_len is not None else ("+" if min_len == 1 else
                                                                     f"{{{min_len},}}" if min_len else "*")
    return g.add(f"string-{min_len}-{max_len if max_len is not None else 'n'}", f'"\\"" jchar{bounds} "\\""')


def _base(g: Rules) -> None:
    g.add("ws", f"[ \\t\\n]{{0,{_WS}}}")
    g.add("jchar", '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})')
    digits = f"[0-9]{{0,{_NUMBER_DIGITS - 1}}}"
    g.add("integer", f'"-"? ("0" | [1-9] {digits})')
    g.add("number", f'integer ("." [0-9]{{1,{_NUMBER_DIGITS}}})? ([eE] [-+]? [0-9]{{1,3}})?')
    g.add("value", 'object | array | string-0-n | number | "true" | "false" | "null"')
    _string(g)
    g.add("member", 'string-0-n ws ":" ws value')
    g.add("object", '"{" ws (member (ws "," ws member)*)? ws "}"')
    g.add("array", '"[" ws (value (ws "," ws value)*)? ws "]"')


class _Builder:
    def __init__(self, anchors: tuple[tuple[str, str], ...]) -> None:
        self.g = Rules()
        _base(self.g)
        self.olds: list[tuple[str, str]] = []
        for path, text in anchors:
            old = anchored_text(self.g, self.g.fresh(f"old-{path}"), text, JSON_FORMS)
            if old is not None:
                self.olds.append((lit(json.dumps(path, ensure_ascii=False)), old))

    def value(self, schema: Any, where: str) -> str:
        if not isinstance(schema, dict):
            return "value"
        choices = schema.get("enum", [schema["const"]] if "const" in schema else None)
        if isinstance(choices, list) and choices:
            return self.g.add(self.g.fresh(where), " | ".join(lit(json.dumps(c, ensure_ascii=False)) for c in choices))
        kind = schema.get("type")
        if kind == "string":
            return _string(self.g, int(schema.get("minLength", 0)), schema.get("maxLength"))
        if kind in ("number", "integer"):
            return str(kind)
        if kind == "boolean":
            return self.g.add("boolean", '"true" | "false"')
        if kind == "array":
            items = schema.get("items")
            item = self.edit_item(where) if is_edit_item(items) and self.olds else self.value(items, where + "-item")
            most = schema.get("maxItems")
            more = f"{{0,{most - 1}}}" if isinstance(most, int) and most >= 1 else "*"
            body = f"{item} (ws \",\" ws {item}){more}"
            body = body if schema.get("minItems", 0) >= 1 else f"({body})?"
            return self.g.add(self.g.fresh(where), f'"[" ws {body} ws "]"')
        if kind == "object" and isinstance(schema.get("properties"), dict) and schema.get("additionalProperties") is False:
            return self.object(schema, where)
        return "value"

    def edit_item(self, where: str) -> str:
        """{"path": P, "old": <a copy of P's text>, "new": "..."}, one variant per quoted file."""
        sep = 'ws "," ws'
        key = {k: f'{lit(json.dumps(k))} ws ":" ws' for k in ("path", "old", "new")}
        variants = [f'"{{" ws {key["path"]} {path} {sep} {key["old"]} {old} {sep} {key["new"]} string-0-n ws "}}"'
                    for path, old in self.olds]
        return self.g.add(self.g.fresh(where + "-edit"), " | ".join(variants))

    def object(self, schema: dict[str, Any], where: str) -> str:
        props: dict[str, Any] = schema["properties"]
        required = [k for k in props if k in set(schema.get("required", []))]
        keys = required + [k for k in props if k not in required]
        items = [f"{lit(json.dumps(k))} ws \":\" ws {self.value(props[k], f'{where}-{k}')}" for k in keys]
        base = self.g.fresh(where)
        head = members_in_order(self.g, base, items, keys, required, 'ws "," ws')
        empty = ' | "{" ws "}"' if not required else ""
        return self.g.add(base, f'"{{" ws ({head}) ws "}}"{empty}')


@functools.lru_cache(maxsize=16)
def json_answer_grammar(schema_text: str, anchors: tuple[tuple[str, str], ...]) -> str | None:
    """The grammar of the JSON answer `schema_text` (a JSON Schema, as text) whose edits copy `anchors`
    ((path, text) of the files the prompt quoted whole); None when no file gives an anchor or the
    schema has no edits (then `response_format` holds the answer as before)."""
    schema = json.loads(schema_text)
    edits = (schema.get("properties") or {}).get("edits") if isinstance(schema, dict) else None
    if not isinstance(edits, dict) or not is_edit_item(edits.get("items")):
        return None
    b = _Builder(anchors)
    if not b.olds:
        return None
    answer = b.value(schema, "answer")
    b.g.add("root", f"ws {answer} ws")
    return b.g.text()
