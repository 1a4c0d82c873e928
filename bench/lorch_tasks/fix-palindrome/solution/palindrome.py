"""Palindromes."""


def is_palindrome(text):
    """True when text reads the same forwards and backwards, ignoring case, spaces and punctuation."""
    cleaned = [ch.lower() for ch in text if ch.isalnum()]
    return cleaned == cleaned[::-1]
