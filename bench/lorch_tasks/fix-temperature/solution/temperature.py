"""Temperature conversions."""


def celsius_to_fahrenheit(c):
    """Convert degrees Celsius to degrees Fahrenheit."""
    return c * 9 / 5 + 32


def fahrenheit_to_celsius(f):
    """Convert degrees Fahrenheit to degrees Celsius."""
    return (f - 32) * 5 / 9
