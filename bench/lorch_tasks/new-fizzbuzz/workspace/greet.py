"""Greetings."""


def hello(name):
    """Return a friendly greeting for name."""
    return f"Hello, {name}!"
