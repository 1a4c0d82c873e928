"""The plan grammar's answer table: the table `run` returns, built from the role's JSON Schema.

Keys in the schema's order with required ones present, value kinds from the schema (never a table
where a string belongs), `allOf` if/then requirements as one variant per literal value, and
`minItems`/`maxItems` as counts. The grammar only guides sampling; the validator stays the final
word on everything else (lengths, ranges, patterns).
"""

from __future__ import annotations

import json
from typing import Any

from agent.plans.gbnf import lit as _lit
from agent.plans.gbnf import members_in_order
from agent.plans.grammar_rules import PlanRules, lua_literal
from agent.resources import schema_dir

__all__ = ["answer_schema", "object_rule"]


def _value(g: PlanRules, schema: Any, where: str) -> str:
    """The rule for one answer value of `schema` (at `where`); one rule per distinct sub-schema."""
    if not isinstance(schema, dict):
        return "expr"
    key = "value:" + json.dumps(schema, sort_keys=True)
    if key not in g.memo:
        g.memo[key] = _new_value(g, schema, where)
    return g.memo[key]


def _new_value(g: PlanRules, schema: dict[str, Any], where: str) -> str:
    choices = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if isinstance(choices, list) and choices and all(isinstance(c, str) for c in choices):
        return g.add(g.fresh(where), " | ".join([*(lua_literal(c) for c in choices), "v-ref"]))
    kind = schema.get("type")
    if kind == "string":
        return "v-str"
    if kind in ("number", "integer"):
        return "v-num"
    if kind == "boolean":
        return "v-bool"
    if kind == "array":
        items_schema = schema.get("items")
        # Objects in a list are written out: `files = {"a.py"}` or `{path}` is the mistake to prevent.
        if isinstance(items_schema, dict) and _has_properties(items_schema):
            item = object_rule(g, items_schema, where + "-item")
        else:
            item = _value(g, items_schema, where + "-item")
        more = schema.get("maxItems")
        repeat = f"{{0,{more - 1}}}" if isinstance(more, int) and more >= 1 else "*"
        items = f"{item} (ws fsep ws {item}){repeat} (ws fsep)? ws"
        literal = f'"{{" ws {items} "}}"' if schema.get("minItems", 0) >= 1 else f'"{{" ws ({items})? "}}"'
        return g.add(g.fresh(where), f"{literal} | v-ref")
    if kind == "object" and _has_properties(schema):
        return g.add(g.fresh(where), f"{object_rule(g, schema, where)} | v-ref")
    return "expr"


def _has_properties(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object" and bool(schema.get("properties"))


Cases = dict[Any, tuple[frozenset[str], dict[str, int]]]


def _conditions(schema: dict[str, Any]) -> tuple[str, Cases] | None:
    """`allOf: [{if: {properties: {K: {const: v}}}, then: {required, properties: {P: {minItems}}}}]`
    as (K, {each value of K: (keys it requires, minItems it sets)}); None for any other shape."""
    rules = schema.get("allOf")
    if not isinstance(rules, list) or not rules:
        return None
    key: str | None = None
    found: Cases = {}
    for rule in rules:
        cond, then = rule.get("if", {}), rule.get("then", {})
        props = cond.get("properties", {})
        if set(rule) != {"if", "then"} or len(props) != 1 or set(cond) - {"properties", "required"}:
            return None
        ((name, test),) = props.items()
        if set(test) != {"const"} or key not in (None, name) or set(then) - {"required", "properties"}:
            return None
        key = name
        mins = then.get("properties", {})
        if any(set(v) != {"minItems"} for v in mins.values()):
            return None
        required, counts = found.get(test["const"], (frozenset(), {}))
        found[test["const"]] = (required | set(then.get("required", [])),
                                {**counts, **{k: v["minItems"] for k, v in mins.items()}})
    prop = schema.get("properties", {}).get(key)
    if key is None or not isinstance(prop, dict):
        return None
    values = prop.get("enum", [True, False] if prop.get("type") == "boolean" else None)
    if not isinstance(values, list) or not all(isinstance(v, (str, bool)) for v in values) or set(found) - set(values):
        return None
    return key, {v: found.get(v, (frozenset(), {})) for v in values}


def object_rule(g: PlanRules, schema: dict[str, Any], where: str) -> str:
    """The rule of a table shaped like `schema` (an object with properties); one per distinct schema."""
    key = "object:" + json.dumps(schema, sort_keys=True)
    if key not in g.memo:
        g.memo[key] = _new_object(g, schema, where)
    return g.memo[key]


def _new_object(g: PlanRules, schema: dict[str, Any], where: str) -> str:
    """`{k = v, ...}`: the schema's keys in the schema's order, each required key present.

    `if K is v then require ...` (allOf) becomes one variant per literal value of K; a K computed at
    run time gets only the unconditional requirements. The validator judges everything else
    (lengths, ranges, patterns) and stays the final word.
    """
    props = dict(schema["properties"])
    required = set(schema.get("required", []))
    conditions = _conditions(schema)
    if conditions is None:
        fields = [(k, _value(g, v, f"{where}-{k}")) for k, v in props.items()]
        return _keys_in_order(g, fields, required, where)
    key, cases = conditions
    variants = []
    for value, (needs, min_items) in cases.items():
        tag = f"{where}-{str(value).lower()}"
        fields = [(k, g.add(g.fresh(f"{tag}-{k}"), lua_literal(value)) if k == key
                   else _value(g, {**v, "minItems": min_items[k]} if k in min_items else v, f"{tag}-{k}"))
                  for k, v in props.items()]
        variants.append(_keys_in_order(g, fields, required | needs, tag))
    fields = [(k, "v-ref" if k == key else _value(g, v, f"{where}-{k}")) for k, v in props.items()]
    variants.append(_keys_in_order(g, fields, required, f"{where}-computed"))
    return g.add(g.fresh(f"{where}-obj"), " | ".join(variants))


def _keys_in_order(g: PlanRules, fields: list[tuple[str, str]], required: set[str], where: str) -> str:
    """`{k = <rule>, ...}` in the given order, required keys present, optional ones skippable, a
    trailing separator allowed (`members_in_order`)."""
    items = [f"{_lit(k)} ws \"=\" ws {rule}" for k, rule in fields]
    keys = [k for k, _ in fields]
    base = g.fresh(where + "-keys")
    head = members_in_order(g, base, items, keys, required, "ws fsep ws", trailing="ws fsep")
    body = g.add(base, f'"{{" ws ({head}) ws "}}"')
    if not required.intersection(keys):
        body = g.add(base + "-or-empty", f'{body} | "{{" ws "}}"')
    return body


def answer_schema(role: str) -> dict[str, Any]:
    """The role's answer schema (`schemas/answers/<role>.json`)."""
    schema = json.loads((schema_dir() / "answers" / f"{role}.json").read_text())
    if not isinstance(schema, dict):
        raise ValueError(f"answer schema of {role} is not an object")
    return schema
