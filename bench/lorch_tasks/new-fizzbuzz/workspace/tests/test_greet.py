import unittest

from greet import hello


class HelloTest(unittest.TestCase):
    def test_hello(self):
        self.assertEqual(hello("Ada"), "Hello, Ada!")


if __name__ == "__main__":
    unittest.main()
