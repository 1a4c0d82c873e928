"""Number helpers."""


def clamp(x, low, high):
    """Limit x to the range [low, high]."""
    return max(low, min(x, high))
