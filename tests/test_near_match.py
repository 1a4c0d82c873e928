"""An edit whose `old` is not copied exactly lands on the one block it means, or is asked again."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.edits.changes import ChangeError, apply_edit, planned_writes
from agent.edits.near_match import find_block
from agent.workspace import Workspace

CART = '''"""A shopping cart."""


class Cart:
    def __init__(self):
        self.items = {}

    def add(self, name, price, quantity=1):
        """Add quantity units of an item."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self.items[name] = [price, quantity]

    def total(self):
        return sum(p * q for p, q in self.items.values())
'''
# Qwen2.5-Coder-1.5B under real lorch: the method quoted without its docstring
ADD_NO_DOC = '''    def add(self, name, price, quantity=1):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self.items[name] = [price, quantity]
'''
REMOVE = '''
    def remove(self, name):
        del self.items[name]
'''


def _apply(old: str, new: str, content: str = CART) -> tuple[str, list[str]]:
    notes: list[str] = []
    return apply_edit(content, old, new, "edits[0]", "cart.py", notes), notes


def test_a_method_quoted_without_its_docstring_replaces_it_and_keeps_the_docstring() -> None:
    out, notes = _apply(ADD_NO_DOC, ADD_NO_DOC + REMOVE)
    assert out.count("def add(") == 1 and "def remove(self, name):\n        del self.items[name]\n" in out
    assert 'def add(self, name, price, quantity=1):\n        """Add quantity units of an item."""\n' in out
    assert "def total(self):" in out and "def __init__" in out
    assert notes == ["edits[0]: old was not exact; replaced lines 8-12 of cart.py (1 line of the file left out)"]
    compile(out, "cart.py", "exec")


def test_a_long_docstring_left_out_still_finds_the_function() -> None:
    # Qwen2.5-Coder-1.5B under real lorch: `def` and `return` of a 3-line function, the docstring
    # between them (longer than both) left out, so the text alone is only ~50% alike
    content = ('"""Palindromes."""\n\n\ndef is_palindrome(text):\n    """True when text reads the same forwards and '
               'backwards, ignoring case, spaces and punctuation."""\n    return text == text[::-1]\n')
    old = "def is_palindrome(text):\n    return text == text[::-1]\n"
    new = "def is_palindrome(text):\n    text = ''.join(c.lower() for c in text if c.isalnum())\n    return text == text[::-1]"
    out, notes = _apply(old, new, content)
    assert out.endswith('    """True when text reads the same forwards and backwards, ignoring case, spaces and '
                        "punctuation.\"\"\"\n    text = ''.join(c.lower() for c in text if c.isalnum())\n"
                        "    return text == text[::-1]\n")
    assert notes == ["edits[0]: old was not exact; replaced lines 4-6 of palindrome.py (1 line of the file left out)"
                     .replace("palindrome.py", "cart.py")]


def test_a_left_out_line_is_not_put_back_when_new_drops_its_anchor() -> None:
    out, _ = _apply(ADD_NO_DOC, "")  # the method deleted: its docstring goes with it
    assert "def add" not in out and "Add quantity units" not in out and "def total" in out


def test_whitespace_only_differences_match_exactly_and_new_moves_to_the_files_indentation() -> None:
    old = "def total(self):\n  return sum(p * q   for p, q in self.items.values())"
    out, notes = _apply(old, "def total(self):\n  return 0")
    assert out.endswith("    def total(self):\n        return 0\n") or "    def total(self):\n      return 0\n" in out
    assert "(ignoring whitespace)" in notes[0]
    compile(out, "cart.py", "exec")


def test_two_places_that_fit_about_as_well_are_not_guessed() -> None:
    content = "".join(f"def op{i}(self):\n    return {i}\n\n" for i in range(6))
    assert find_block(content, "def op(self):\n    return 7\n") is None
    with pytest.raises(ChangeError, match="not even its first line"):
        _apply("def op(self):\n    return 7\n", "x", content)
    # ... but a paraphrase that is clearly nearer one of them lands there
    out, notes = _apply("def op1(self):\n    return 11\n", "def op1(self):\n    return 111\n", content)
    assert "def op1(self):\n    return 111\n" in out and "return 1\n" not in out and len(notes) == 1


@pytest.mark.parametrize("old", ["def checkout(self):\n    return self.pay()\n",      # not in the file at all
                                 "        return sum(x for x in self.items)\n"])    # one paraphrased line
def test_text_that_is_not_near_anything_is_refused(old: str) -> None:
    with pytest.raises(ChangeError, match="the old text is not in cart.py"):
        _apply(old, "x")


def test_a_file_that_breaks_python_is_sent_back_with_the_line(tmp_path: Path) -> None:
    (tmp_path / "cart.py").write_text(CART)
    answer = {"files": [{"path": "cart.py", "content": CART.replace("    def total(self):\n", "    def total(self)\n")}]}
    with pytest.raises(ChangeError, match=r"files\[0\]: after this change cart.py is not valid Python: line 14"):
        planned_writes(Workspace(tmp_path), answer)
    new = {"files": [{"path": "new.py", "content": "def f(:\n"}]}
    with pytest.raises(ChangeError, match=r"files\[0\]: after this change new.py is not valid Python: line 1"):
        planned_writes(Workspace(tmp_path), new)


def test_a_file_that_did_not_compile_before_is_not_held_against_the_answer(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def f(:\n    return 1\n")
    answer = {"files": [{"path": "broken.py", "content": "def f(:\n    return 2\n"}]}
    [write] = planned_writes(Workspace(tmp_path), answer)
    assert write.content == "def f(:\n    return 2\n"


def test_a_file_that_defines_a_function_twice_is_sent_back(tmp_path: Path) -> None:
    # Qwen2.5-Coder-1.5B under real lorch: the "fix" repeated the neighbouring function after it
    temp = ('def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32\n\n\n'
            'def fahrenheit_to_celsius(f):\n    """Convert."""\n    return f - 32 * 5 / 9\n')
    (tmp_path / "temperature.py").write_text(temp)
    answer = {"files": [{"path": "temperature.py", "content": temp + "\n\ndef celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32\n"}]}
    with pytest.raises(ChangeError, match=r"defines celsius_to_fahrenheit twice \(lines 1, 10\)"):
        planned_writes(Workspace(tmp_path), answer)
    # a duplicate the file already had, a decorated redefinition (a property setter) and methods of
    # the same name in two classes are not the answer's doing
    (tmp_path / "old.py").write_text("def f():\n    pass\n\n\ndef f():\n    pass\n")
    (tmp_path / "cls.py").write_text("class A:\n    @property\n    def x(self):\n        return 1\n\n"
                                     "class B:\n    def x(self):\n        return 2\n")
    ok = {"files": [{"path": "old.py", "content": "def f():\n    pass\n\n\ndef f():\n    return 1\n"},
                    {"path": "cls.py", "content": "class A:\n    @property\n    def x(self):\n        return 1\n\n"
                                                  "    @x.setter\n    def x(self, v):\n        pass\n\n"
                                                  "class B:\n    def x(self):\n        return 2\n"}]}
    assert len(planned_writes(Workspace(tmp_path), ok)) == 2


def test_an_old_text_whose_first_line_is_absent_is_told_the_nearest_line() -> None:
    # The 0.5B (run gram18, feature-cart): `def add(name, …)` for `def add(self, name, …)`, three
    # plans running, with a body unlike the file's. The message names the line to copy.
    old = "def add(name, price, quantity=1):\n    self.items.append(name)\n    self.log(name)\n    return None\n"
    with pytest.raises(ChangeError) as err:
        _apply(old, "x")
    assert "the nearest is line 8: '    def add(self, name, price, quantity=1):'" in str(err.value)
    with pytest.raises(ChangeError) as far:
        _apply("def checkout(self, card):\n    return self.pay(card)\n", "x")
    assert "nearest" not in str(far.value)                    # nothing near: no guess
