"""Behavioural check for T-001 (kept outside the workspace: the agent never sees it)."""
import unittest


class FizzBuzzCheck(unittest.TestCase):
    def test_first_fifteen(self):
        from fizzbuzz import fizzbuzz
        self.assertEqual(fizzbuzz(15), ["1", "2", "Fizz", "4", "Buzz", "Fizz", "7", "8", "Fizz", "Buzz",
                                        "11", "Fizz", "13", "14", "FizzBuzz"])

    def test_edges(self):
        from fizzbuzz import fizzbuzz
        self.assertEqual(fizzbuzz(0), [])
        self.assertEqual(fizzbuzz(1), ["1"])
        result = fizzbuzz(30)
        self.assertEqual(len(result), 30)
        self.assertEqual(result[29], "FizzBuzz")
        self.assertTrue(all(isinstance(x, str) for x in result))
