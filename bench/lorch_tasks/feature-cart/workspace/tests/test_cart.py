import unittest

from cart import Cart


class CartTest(unittest.TestCase):
    def test_add_and_total(self):
        cart = Cart()
        cart.add("apple", 0.5, 4)
        cart.add("pear", 1.25)
        self.assertEqual(cart.total(), 3.25)

    def test_add_again_raises_quantity(self):
        cart = Cart()
        cart.add("apple", 0.5)
        cart.add("apple", 0.5, 2)
        self.assertEqual(cart.items["apple"], [0.5, 3])

    def test_bad_quantity(self):
        with self.assertRaises(ValueError):
            Cart().add("apple", 0.5, 0)


if __name__ == "__main__":
    unittest.main()
