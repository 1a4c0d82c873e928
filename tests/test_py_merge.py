"""A Python answer that is only some definitions of a file is merged into it (agent/edits/py_merge.py)."""

from __future__ import annotations

import ast

from agent.edits.py_merge import merge_definitions

CART = '''"""A shopping cart."""

import math


class Cart:
    """Items with a price and a quantity."""

    def __init__(self):
        self.items = {}

    def add(self, name, price, quantity=1):
        """Add quantity units of name."""
        self.items[name] = (price, self.items.get(name, (price, 0))[1] + quantity)

    def total(self):
        return sum(p * q for p, q in self.items.values())
'''

TEMP = '''def celsius_to_fahrenheit(c):
    return c * 9 / 5 + 32


def fahrenheit_to_celsius(f):
    return f - 32 * 5 / 9
'''


def test_a_fixed_function_replaces_its_namesake_and_the_rest_stays() -> None:
    merged, how = merge_definitions(TEMP, "def fahrenheit_to_celsius(f):\n    return (f - 32) * 5 / 9\n")
    assert merged == TEMP.replace("f - 32 * 5 / 9", "(f - 32) * 5 / 9")
    assert how == "replaced fahrenheit_to_celsius"


def test_a_new_method_goes_into_the_one_class_indented_with_self_added_when_left_out() -> None:
    # the 0.5B's answer for cart.py, tabs and all: a method without self that uses self
    fragment = "def remove(name, quantity=1):\n\tif name not in self.items:\n\t\traise KeyError(name)\n\tdel self.items[name]\n"
    merged, how = merge_definitions(CART, fragment)
    assert how == "added Cart.remove (self added)"
    tree = ast.parse(merged)
    cart = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    assert [m.name for m in cart.body if isinstance(m, ast.FunctionDef)] == ["__init__", "add", "total", "remove"]
    assert "    def remove(self, name, quantity=1):\n        if name not in self.items:\n" in merged
    assert merged.startswith(CART)  # nothing of the file changed but the addition


def test_a_method_and_a_class_fragment_replace_and_add_members() -> None:
    merged, how = merge_definitions(CART, "    def total(self):\n        return round(sum(p * q for p, q in self.items.values()), 2)\n")
    assert how == "replaced Cart.total" and "return round(sum(" in merged and merged.count("def total") == 1
    fragment = "class Cart:\n    def total(self):\n        return 0\n\n    def clear(self):\n        self.items = {}\n"
    merged, how = merge_definitions(CART, fragment)
    assert how == "replaced Cart.total; added Cart.clear"
    assert '"""Add quantity units of name."""' in merged and "        return 0\n" in merged
    compile(merged, "cart.py", "exec")


def test_imports_join_the_imports_and_new_functions_go_to_the_end() -> None:
    merged, how = merge_definitions(TEMP, "import math\n\ndef kelvin(c):\n    return c + 273.15\n")
    assert merged.startswith("import math\n") and merged.endswith("\n\ndef kelvin(c):\n    return c + 273.15\n")
    assert how == "imported import math; added kelvin"


def test_what_is_not_only_definitions_or_has_no_clear_place_is_left_to_the_refusal() -> None:
    assert merge_definitions(TEMP, "return (f - 32) * 5 / 9\n") is None  # not Python on its own
    assert merge_definitions(TEMP, "x = 1\ndef f():\n    pass\n") is None  # a statement beside the definition
    two = CART + "\n\nclass Basket:\n    def __init__(self):\n        self.items = []\n"
    assert merge_definitions(two, "def remove(self, name):\n    del self.items[name]\n") is None  # which class?
    assert merge_definitions(TEMP, "def f(:\n") is None
    assert merge_definitions(TEMP, '"""only a docstring"""\n') is None


def test_a_stub_never_replaces_a_real_body() -> None:
    assert merge_definitions(TEMP, "def fahrenheit_to_celsius(f):\n    pass\n") is None
    assert merge_definitions(CART, "def total(self):\n    ...\n") is None
    assert merge_definitions(CART, "class Cart:\n    def add(self, name, price, quantity=1):\n"
                                   "        raise NotImplementedError\n") is None


def test_an_import_of_what_the_file_defines_itself_is_not_merged() -> None:
    # the 1.5B under real lorch: `from mathutil import clamp` merged into mathutil.py broke every test
    old = "import math\n\n\ndef clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n"
    merged = merge_definitions(old, "from mathutil import clamp\nimport os\n\n\ndef mean(v):\n    return sum(v) / len(v)\n")
    assert merged is not None
    assert "from mathutil import clamp" not in merged[0] and "import os\n" in merged[0] and "def mean(v)" in merged[0]
    assert merged[1] == "imported import os; added mean"
