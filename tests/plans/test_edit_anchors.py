"""An edit's `old` text held to a copy of the quoted file: what Lua reads is always there, once."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from gbnf_matcher import parse_gbnf

from agent.plans.edit_anchors import anchored_text
from agent.plans.gbnf import Rules
from agent.plans.grammar import plan_grammar
from agent.plans.sandbox import new_runtime
from agent.plans.tools import plan_tools_for

CART = (Path(__file__).resolve().parents[2] / "bench/lorch_tasks/feature-cart/workspace/cart.py").read_text()

FILES = {
    "cart": CART,
    "brackets": 'x = t[1]\ny = [[a]]\n    z = u[v[2]]\n\tq = "\\\\ \'"\nx = t[1]\nlast]',
    "fence": "a\n```\nb\nc\n",
    "repeats": "a\na\nb\na\n",
    "unicode": "    s = 'é λ 😀'\n\treturn s  -- tab indented\n",
    "all long levels": "]]\n]=]\n]==]\nx\n",
}


def _lua_reader():  # type: ignore[no-untyped-def]
    lua = new_runtime(max_memory=64 * 1024 * 1024)
    return lua.eval("function(src) local f = load('return ' .. src, '=old', 't', {}) "
                    "if not f then return nil end return f() end")


@pytest.mark.parametrize("name", list(FILES))
def test_every_old_text_the_grammar_allows_is_in_the_file_exactly_once(name: str) -> None:
    text = FILES[name]
    g = Rules()
    rule = anchored_text(g, "old", text)
    assert rule is not None
    grammar = parse_gbnf(g.text() + "root ::= old\n")
    read = _lua_reader()
    rng = random.Random(name)
    forms = set()
    for _ in range(200):
        literal = grammar.sample(rng, "ab", rule="old", max_depth=400, max_chars=6000)
        value = read(literal.encode("utf-8"))
        assert value is not None, literal
        old = value.decode("utf-8")
        assert text.count(old) == 1, (literal, old)
        forms.add(literal[0])
    assert forms == {'"', "'", "["}  # all three string forms are offered


def test_a_file_without_a_unique_line_or_with_control_characters_gives_no_anchor() -> None:
    assert anchored_text(Rules(), "old", "a\n" * 30) is None  # unique only as 16+ lines
    assert anchored_text(Rules(), "old", "x = 1\r\ny = 2\r\n") is None


def _builder(anchors: tuple[tuple[str, str], ...]):  # type: ignore[no-untyped-def]
    return parse_gbnf(plan_grammar("builder", plan_tools_for("builder"), frozenset(), anchors))


def _plan(edit: str) -> str:
    return f'```lua\nfunction run(context)\n  local r = {edit}\n  return {{summary = "added remove"}}\nend\n```'


def test_a_builder_edit_copies_the_quoted_file() -> None:
    # The 0.5B's edits of feature-cart (runs gram17–gram26) dropped `self`, re-indented the method,
    # or named the old text by a variable it never defined; each is refused here.
    g = _builder((("cart.py", CART),))
    copied = [
        "tools.edit(\"cart.py\", '    def add(self, name, price, quantity=1):\\n', 'x')",
        "tools.edit('cart.py', 'def total(self):', 'x', {replace_all = false})",
        'tools.edit("cart.py", [[\n    def total(self):\n        """The price of everything in the cart."""\n]], [[y]])',
        "tools.edit(\"cart.py\", \"            raise ValueError(\\\"quantity must be positive\\\")\\n\", 'z')",
    ]
    for edit in copied:
        assert g.accepts(_plan(edit)), edit
    wrong = [
        "tools.edit(\"cart.py\", '    def add(name, price, quantity=1):\\n', 'x')",   # `self` dropped
        "tools.edit(\"cart.py\", '  def total(self):', 'x')",                          # re-indented
        "tools.edit(\"cart.py\", '        return self.items[name]', 'x')",              # not in the file
        "tools.edit(\"cart.py\", 'def add(self, name, price, quantity=1):\\n\\n', 'x')",  # past the line's end
        "tools.edit(\"other.py\", 'def total(self):', 'x')",                           # a file not quoted
        "tools.edit(\"cart.py\", old, 'x')",
        "tools.edit(\"cart.py\", '    \"\"\"', 'x')",                                   # not unique
    ]
    for edit in wrong:
        assert not g.accepts(_plan(edit)), edit


def test_returned_edits_copy_the_quoted_file_too() -> None:
    g = _builder((("cart.py", CART),))
    old = "        else:\\n            self.items[name] = [price, quantity]\\n"
    answer = '{{summary = "x", edits = {{{{path = "cart.py", old = "{}", new = "y"}}}}}}'
    plan = "```lua\nfunction run(context)\n  return " + answer.format(old) + "\nend\n```"
    assert g.accepts(plan)
    assert not g.accepts(plan.replace("[price, quantity]", "[price, qty]"))
    assert not g.accepts(plan.replace('path = "cart.py"', 'path = "cart2.py"'))


def test_without_quoted_files_an_edit_is_free() -> None:
    g = _builder(())
    assert g.accepts(_plan("tools.edit(\"cart.py\", '    def add(name, price, quantity=1):\\n', 'x')"))
    assert g.accepts(_plan("tools.edit(path, old, new)"))
