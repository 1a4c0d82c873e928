"""Cutting a plan where it began to repeat itself: what is kept, what is closed, what is refused."""

from __future__ import annotations

from gbnf_matcher import parse_gbnf

from agent.plans.extract import find_lua_plan
from agent.plans.grammar import plan_grammar
from agent.plans.lint import check_plan
from agent.plans.loop_cut import cut_loop, rest_of_run_grammar
from agent.plans.tools import plan_tools_for

# The 0.5B's feature-cart plan (run gram9), shortened: an edit, then a test file that loops.
EDIT = ('  local r = tools.edit("cart.py", "    def total(self):\\n", "    def remove(self, name):\\n'
        '        del self.items[name]\\n\\n    def total(self):\\n")\n')
HEAD = '```lua\nfunction run(context)\n' + EDIT + '  local w = tools.write("tests/test_cart.py", [[\nfrom cart import Cart\n\n\ndef test_remove():\n    cart = Cart()\n'
BLOCK = '    cart.remove("pear", 1.25)\n    self.assertEqual(cart.items["pear"], [0, 0])\n\n'
REST = '\n  return {summary = "Added remove and a test"}\nend\n```'


def test_a_file_that_loops_keeps_its_first_copy_and_the_call_is_closed() -> None:
    cut = cut_loop(HEAD + BLOCK * 30 + BLOCK[:20])
    assert cut is not None and cut.closer == "]])"
    # The copies begin one character early (HEAD ends with the block's last character, a newline):
    # the kept copy loses its trailing blank line, no more.
    assert cut.head == HEAD.removeprefix("```lua\n") + BLOCK.rstrip("\n") + "\n]])"
    assert cut.line == cut.head.count("\n") + 1
    source = find_lua_plan(f"```lua\n{cut.head}\n{REST.strip()}")
    assert source is not None
    check_plan(source)                                   # the joined plan compiles and lints


METHOD = "    def __repr__(self):\\n        return str(self.items)\\n\\n"


def test_a_loop_in_an_edits_new_text_closes_the_call() -> None:
    # The 0.5B's edit whose `new` text repeated one method (run gram8).
    reply = ('```lua\nfunction run(context)\n  local r = tools.edit("cart.py", \'class Cart:\\n\', '
             "'class Cart:\\n" + METHOD * 20)
    cut = cut_loop(reply)
    assert cut is not None and cut.closer == "')" and cut.missing == ()
    assert cut.head.count("def __repr__") == 1


def test_a_loop_in_an_edits_old_text_leaves_the_call_open_for_its_new_text() -> None:
    # The 0.5B's edit whose `old` text looped (run gram10): closing the call there left the edit
    # without `new`, so it could only fail. The model is asked for `new` and the `)` first.
    reply = '```lua\nfunction run(context)\n  local r = tools.edit("cart.py", \'class Cart:\\n' + METHOD * 20
    cut = cut_loop(reply)
    assert cut is not None and cut.closer == "'" and cut.missing == ("new",)
    rest = parse_gbnf(rest_of_run_grammar(plan_grammar("builder", plan_tools_for("builder")), len(cut.missing)))
    tail = ", 'class Cart:\\n    pass\\n')\n  return {summary = \"x\"}\nend"
    assert rest.accepts(tail) and not rest.accepts(tail.replace(", 'class Cart:\\n    pass\\n'", ""))
    # The text, not a name: asked for "the remaining argument (new)", the 0.5B wrote `, new)` (gram16).
    assert not rest.accepts(tail.replace("'class Cart:\\n    pass\\n'", "new"))
    assert rest.accepts(tail.replace("'class Cart:\\n    pass\\n'", "[[class Cart:\n    pass\n]]"))
    source = find_lua_plan(f"```lua\n{cut.head}{tail}\n```")
    assert source is not None
    check_plan(source)


def test_no_cut_without_a_loop_or_outside_the_plan() -> None:
    assert cut_loop(HEAD + BLOCK * 3) is None                                  # not a loop yet
    assert cut_loop("Let me explain. " * 80) is None                           # no plan at all
    plan = HEAD + BLOCK + ']])\n  return {summary = "x"}\nend\n```\n'
    assert cut_loop(plan + "The plan is now complete. " * 40) is None           # prose after the plan


def test_no_cut_when_the_string_swallowed_the_plans_own_end() -> None:
    # The string never closed and the plan's `return ... end` became file text; the loop is in the
    # prose after it. Cutting there would write plan code into the file (that case is closed where
    # the code resumes: agent/plans/unclosed.py).
    reply = HEAD + '  return {summary = "x"}\nend\n``\n\n' + "The tests are running. " * 40
    assert cut_loop(reply) is None


def test_the_rest_of_run_grammar_takes_statements_the_answer_and_end_only() -> None:
    text = rest_of_run_grammar(plan_grammar("builder", plan_tools_for("builder")))
    rest = parse_gbnf(text)
    assert rest.accepts(REST)
    assert rest.accepts('\n  if w.error then error("write failed") end\n  return {summary = "x"}\nend')
    assert not rest.accepts("\n  return {summary = 'x'}\n")                       # `end` is due
    assert not rest.accepts("```lua\nfunction run(context)\n  return {summary = 'x'}\nend\n```")  # no second plan


def test_a_loop_in_code_inside_a_call_is_closed_on_a_line_of_its_own() -> None:
    # The 0.5B (run gram11): an edit's arguments ran on in comment lines and `// Add and more`
    # (Lua's floor division, then names), six comment lines per copy, to the stream's stop.
    block = "    // Add and more\n" + "    -- Add an and more\n" * 6
    reply = ('```lua\nfunction run(context)\n  local r = tools.edit("cart.py", "a", "b"\n'
             "    -- Add more code here if needed\n\n" + block * 12)
    cut = cut_loop(reply)
    assert cut is not None and cut.closer == ")" and cut.head.endswith("-- Add an and more\n)")
    assert cut.head.count("// Add and more") == 1
