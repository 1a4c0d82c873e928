"""Behavioural check for T-001 (kept outside the workspace: the agent never sees it)."""
import unittest


class CartRemoveCheck(unittest.TestCase):
    def test_remove_lowers_quantity(self):
        from cart import Cart
        cart = Cart()
        cart.add("apple", 0.5, 4)
        cart.add("pear", 1.25)
        cart.remove("apple")
        self.assertEqual(cart.total(), 2.75)
        cart.remove("apple", 2)
        self.assertEqual(cart.total(), 1.75)

    def test_remove_all_deletes_item(self):
        from cart import Cart
        cart = Cart()
        cart.add("apple", 0.5, 2)
        cart.remove("apple", 2)
        self.assertNotIn("apple", cart.items)
        cart.add("pear", 1.0, 1)
        cart.remove("pear", 5)
        self.assertNotIn("pear", cart.items)
        self.assertEqual(cart.total(), 0)

    def test_missing_item(self):
        from cart import Cart
        with self.assertRaises(KeyError):
            Cart().remove("plum")

    def test_add_and_total_still_work(self):
        from cart import Cart
        cart = Cart()
        cart.add("apple", 0.5, 4)
        cart.add("apple", 0.5)
        self.assertEqual(cart.items["apple"], [0.5, 5])
        self.assertEqual(cart.total(), 2.5)
        with self.assertRaises(ValueError):
            cart.add("apple", 0.5, 0)
