"""Definitions a goal asks for: what the builder asks for again and a review cannot approve without."""

from __future__ import annotations

from pathlib import Path

from role_context import FakeModel, make_context

from agent.roles.goal_definitions import NewDefinition, new_definitions_named

CART = ('"""A cart."""\n\n\nclass Cart:\n    def __init__(self):\n        self.items = {}\n\n'
        '    def add(self, name, price, quantity=1):\n        self.items[name] = [price, quantity]\n\n'
        '    def total(self):\n        return sum(p * q for p, q in self.items.values())\n')
GOAL = ("Add a method remove(name, quantity=1) to the Cart class in cart.py: it lowers the quantity of the "
        "item called name by quantity, deletes the item when its quantity reaches 0 or less, and raises "
        "KeyError when the item is not in the cart. Keep add() and total() working as they are.")
METHOD = ('Here it is:\n```python\ndef remove(self, name, quantity=1):\n    # lower, delete at 0, KeyError if absent\n'
          '    if name not in self.items:\n        raise KeyError(name)\n    self.items[name][1] -= quantity\n'
          '    if self.items[name][1] <= 0:\n        del self.items[name]\n```\n')


def _ctx(tmp_path: Path, goal: str, model: FakeModel):  # type: ignore[no-untyped-def]
    (tmp_path / "cart.py").write_text(CART)
    return make_context(tmp_path, "implement", model, inputs={"goal": goal})


def test_the_goal_names_a_new_method_of_a_class_in_one_file(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, GOAL, FakeModel([]))
    assert new_definitions_named(ctx) == [NewDefinition("cart.py", "remove", "name, quantity=1", "Cart")]
    assert new_definitions_named(_ctx(tmp_path, "Fix total() in cart.py", FakeModel([]))) == []      # defined
    assert new_definitions_named(_ctx(tmp_path, "Add remove(name) to the Cart", FakeModel([]))) == []  # no file
    function = new_definitions_named(_ctx(tmp_path, "Add a function discount(cart, rate) to cart.py", FakeModel([])))
    assert function == [NewDefinition("cart.py", "discount", "cart, rate", None)]


def test_builtins_imports_and_method_calls_ask_for_nothing_new(tmp_path: Path) -> None:
    goal = "In cart.py, total() must use len(items) and self.items.values() and json.dumps(x) as they are."
    (tmp_path / "cart.py").write_text("import json\n" + CART)
    assert new_definitions_named(make_context(tmp_path, "implement", FakeModel([]), inputs={"goal": goal})) == []
