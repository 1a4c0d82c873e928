"""Reading files written as text out of a reply: the shapes models use for a file's path."""

from __future__ import annotations

from agent.answering.fenced_files import files_in_reply, open_file, path_lines

KNOWN = {"leap.py", "leap_test.py", "src/calc.py", "README.md"}


def test_a_path_line_then_a_block() -> None:
    reply = "Here is the change.\n\nleap.py\n```python\ndef leap_year(y):\n    return y % 4 == 0\n```\n"
    [f] = files_in_reply(reply, KNOWN)
    assert (f.path, f.content, f.how) == ("leap.py", "def leap_year(y):\n    return y % 4 == 0\n", "line")


def test_decorated_path_lines() -> None:
    reply = ("**src/calc.py**\n```python\nA = 1\n```\n"
             "### `leap.py`:\n```\nB = 2\n```\n")
    got = {f.path: (f.content, f.how) for f in files_in_reply(reply, KNOWN)}
    assert got == {"src/calc.py": ("A = 1\n", "line"), "leap.py": ("B = 2\n", "line")}


def test_a_first_comment_line_names_the_file_and_is_not_part_of_it() -> None:
    [f] = files_in_reply("```python\n# stats.py\ndef mean(xs):\n    return 0\n```\n", KNOWN)
    assert (f.path, f.content) == ("stats.py", "def mean(xs):\n    return 0\n")


def test_a_comment_path_in_a_fence_of_its_own_wrapping_the_files_own_fence() -> None:
    # the 1.5B on two tasks: the outer fence opens, the path as a comment, then the file's own fence
    reply = "```\n# File: leap.py\n```python\ndef leap_year(y):\n    return y % 4 == 0\n```\n```\n"
    [f] = files_in_reply(reply, KNOWN)
    assert (f.path, f.content, f.how) == ("leap.py", "def leap_year(y):\n    return y % 4 == 0\n", "comment")


def test_a_block_without_a_path_goes_to_the_file_whose_definitions_it_shares() -> None:
    sources = {"leap.py": "def leap_year(year):\n    pass\n", "other.py": "def other():\n    pass\n"}
    [f] = files_in_reply("Sure:\n\n```python\ndef leap_year(year):\n    return True\n```\n", KNOWN, sources)
    assert (f.path, f.how) == ("leap.py", "definitions")
    # sharing nothing, or as much with two files, places nothing
    assert files_in_reply("```python\ndef unrelated():\n    pass\n```\n", KNOWN, sources) == []


def test_a_method_given_alone_without_a_path_goes_to_the_file_whose_class_has_it() -> None:
    sources = {"cart.py": "class Cart:\n    def add(self, n):\n        pass\n\n    def remove(self, n):\n        pass\n",
               "shop.py": "class Shop:\n    def add(self, n):\n        pass\n"}
    method = "    def remove(self, n):\n        self.items.pop(n)\n"
    [f] = files_in_reply(f"The cause is remove. Here is the method:\n```python\n{method}```\n", KNOWN, sources)
    assert (f.path, f.content, f.how) == ("cart.py", method, "definitions")  # the writer merges it into Cart
    # a method both files' classes have places nothing
    assert files_in_reply("```python\n    def add(self, n):\n        pass\n```\n", KNOWN, sources) == []


def test_commands_and_output_are_not_files() -> None:
    reply = "Run it:\n\nleap.py\n```bash\npython -m unittest leap_test\n```\n```text\nOK\n```\n"
    assert files_in_reply(reply, KNOWN) == []


def test_a_file_given_twice_keeps_its_last_block_and_order_is_kept() -> None:
    reply = "leap.py\n```\nA = 1\n```\nsrc/calc.py\n```\nC = 1\n```\nleap.py\n```\nA = 2\n```\n"
    assert [(f.path, f.content) for f in files_in_reply(reply, KNOWN)] == [("src/calc.py", "C = 1\n"),
                                                                           ("leap.py", "A = 2\n")]


def test_a_known_path_wins_over_other_words_on_the_line() -> None:
    [f] = files_in_reply("Updated leap.py (see notes.txt):\n```\nX = 1\n```\n", KNOWN)
    assert f.path == "leap.py"


def test_an_unclosed_block_or_empty_block_gives_nothing() -> None:
    assert files_in_reply("leap.py\n```python\ndef f():\n    pass\n", KNOWN) == []
    assert files_in_reply("leap.py\n```python\n```\n", KNOWN) == []


def test_every_path_line_shape_it_names_is_read() -> None:
    # the builder stops a reply at these lines (a test file given back): each must be one this parser reads
    for line in path_lines("pkg/calc_test.py"):
        [f] = files_in_reply(f"{line}\n```python\nx = 1\n```\n", {"pkg/calc_test.py"})
        assert (f.path, f.content, f.how) == ("pkg/calc_test.py", "x = 1\n", "line"), line


def test_a_call_on_the_line_before_a_block_names_no_file() -> None:
    # prose that mentions `unittest.main()` before a stray block: no file called "unittest.main"
    reply = "leap.py\n```python\nX = 1\n```\nThe tests end with unittest.main()\n```\n## Files to change\n```\n"
    assert [f.path for f in files_in_reply(reply, KNOWN)] == ["leap.py"]


def test_the_file_a_cut_reply_left_open_is_named() -> None:
    whole = "a.py\n```python\nx = 1\n```\n"
    assert open_file(whole, {"a.py"}) is None
    assert open_file(whole + "\n**b.py**\n```python\nx = 2\nx = 2\n", {"a.py"}) == "b.py"
    assert open_file("Here it is:\n```python\nx = 3\n", set()) == ""  # open, but named nowhere


def test_each_form_asked_for_the_cause_first_is_not_also_told_to_say_nothing_else() -> None:
    from agent.answering.file_forms import FENCED, LUA

    for form in (FENCED, LUA):
        assert form.rules.endswith("Say nothing else.")  # what `reason_rules` takes off
        assert form.reason_rules.startswith("First say in one or two sentences what in your code makes these tests")
        assert "Say nothing else" not in form.reason_rules and "whole" in form.reason_rules
