"""Palindromes."""


def is_palindrome(text):
    """True when text reads the same forwards and backwards, ignoring case, spaces and punctuation."""
    return text == text[::-1]
