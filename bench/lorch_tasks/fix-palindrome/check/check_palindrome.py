"""Behavioural check for T-001 (kept outside the workspace: the agent never sees it)."""
import unittest


class PalindromeCheck(unittest.TestCase):
    def test_phrases(self):
        from palindrome import is_palindrome
        self.assertTrue(is_palindrome("A man, a plan, a canal: Panama"))
        self.assertTrue(is_palindrome("No 'x' in Nixon"))
        self.assertTrue(is_palindrome("Was it a car or a cat I saw?"))
        self.assertTrue(is_palindrome("Racecar"))

    def test_not_palindromes(self):
        from palindrome import is_palindrome
        self.assertFalse(is_palindrome("hello"))
        self.assertFalse(is_palindrome("ab"))
        self.assertFalse(is_palindrome("A man, a plan, a canal: Suez"))
