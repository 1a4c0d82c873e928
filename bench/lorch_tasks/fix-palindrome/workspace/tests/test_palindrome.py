import unittest

from palindrome import is_palindrome


class PalindromeTest(unittest.TestCase):
    def test_simple_words(self):
        self.assertTrue(is_palindrome("racecar"))
        self.assertFalse(is_palindrome("hello"))


if __name__ == "__main__":
    unittest.main()
