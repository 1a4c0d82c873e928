"""A definition the goal names, asked for alone and put in its place, after the builder got no answer."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from role_context import FakeModel, make_context
from support import events, make_command

from agent.roles.definition_alone import NewDefinition, new_definitions_named, write_named_definitions

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


def test_the_method_goes_into_its_class_and_a_reply_that_does_not_fit_is_asked_again(tmp_path: Path) -> None:
    model = FakeModel(["I would add a remove method.", METHOD])
    ctx = _ctx(tmp_path, GOAL, model)
    writes, names = write_named_definitions(ctx, new_definitions_named(ctx))
    assert names == ["remove"] and [w.path for w in writes] == ["cart.py"]
    tree = ast.parse(writes[0].content)
    cart = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    assert [m.name for m in cart.body if isinstance(m, ast.FunctionDef)] == ["__init__", "add", "total", "remove"]
    assert "def remove(self, name, quantity=1):" in model.requests[1].messages[-1]["content"]
    assert model.requests[1].temperature == 0.8 and len(model.requests) == 2


def test_nothing_is_written_when_no_definition_fits(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, GOAL, FakeModel(["no code", "```python\ndef other():\n    pass\n```"]))
    assert write_named_definitions(ctx, new_definitions_named(ctx)) == ([], [])
    assert (tmp_path / "cart.py").read_text() == CART


def test_a_builder_without_a_valid_answer_writes_the_named_method_alone(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # Qwen2.5-Coder-0.5B, default settings, feature-cart (runs V–W4): no valid JSON answer in three
    # attempts, and the failed implement ended lorch's run.
    (workspace / "cart.py").write_text(CART)
    copy = json.dumps({"summary": "No changes needed.", "edits": [{"path": "cart.py", "old": "return sum(",
                                                                   "new": "return sum("}]})
    agent = spawn("builder", "--answers", "json", replies=[copy, copy.replace("No", "Nothing"), copy.replace("No", "None"), METHOD])
    done = events(agent.run(make_command("implement", inputs={"goal": GOAL})), "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["answer_via"] == "definition"
    assert done["payload"]["files"] == ["cart.py"] and "Added remove to cart.py" in done["payload"]["summary"]
    source = (workspace / "cart.py").read_text()
    namespace: dict[str, object] = {}
    exec(compile(source, "cart.py", "exec"), namespace)
    cart = namespace["Cart"]()  # type: ignore[operator]
    cart.add("apple", 0.5, 2)
    cart.remove("apple")
    assert cart.items == {"apple": [0.5, 1]}
    cart.remove("apple")
    assert cart.items == {}


def test_builtins_imports_and_method_calls_ask_for_nothing_new(tmp_path: Path) -> None:
    goal = "In cart.py, total() must use len(items) and self.items.values() and json.dumps(x) as they are."
    (tmp_path / "cart.py").write_text("import json\n" + CART)
    assert new_definitions_named(make_context(tmp_path, "implement", FakeModel([]), inputs={"goal": goal})) == []


def test_a_review_that_approves_without_the_named_method_requests_it(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # The 0.5B (run W5): the builder's change withdrawn, nothing in its place, and the second review
    # approved cart.py without `remove`; lorch said success and the behavioural check failed.
    (workspace / "cart.py").write_text(CART)
    approve = json.dumps({"status": "approved", "summary": "looks good", "findings": []})
    got = spawn("reviewer", replies=[approve]).run(make_command("review", inputs={"goal": GOAL}))
    done = events(got, "review.completed")[-1]
    assert done["status"] == "changes_requested"
    assert done["payload"]["findings"] == [{"path": "cart.py", "comment": "cart.py does not define "
                                            "remove(name, quantity=1) in class Cart, which the goal asks for"}]
    (workspace / "cart.py").write_text(CART + "\n    def remove(self, name, quantity=1):\n        del self.items[name]\n")
    got = spawn("reviewer", replies=[approve]).run(make_command("review", inputs={"goal": GOAL}, task_id="T-0002"))
    assert events(got, "review.completed")[-1]["status"] == "approved"


def test_implement_changes_without_a_valid_answer_writes_the_named_method_alone(spawn, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / "cart.py").write_text(CART)
    cut = '{"summary": "Added remove", "edits": [{"path": "cart.py", "old": "    def total(self'
    agent = spawn("builder", "--answers", "json", replies=[cut, cut + "):", cut + "):\\n", METHOD])
    done = events(agent.run(make_command("implement_changes", inputs={"goal": GOAL})), "builder.completed")[-1]
    assert done["status"] == "success" and done["payload"]["answer_via"] == "definition"
    assert "    def remove(self, name, quantity=1):" in (workspace / "cart.py").read_text()
