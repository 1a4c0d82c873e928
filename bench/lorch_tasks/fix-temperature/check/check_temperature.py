"""Behavioural check for T-001 (kept outside the workspace: the agent never sees it)."""
import unittest


class TemperatureCheck(unittest.TestCase):
    def test_fahrenheit_to_celsius(self):
        from temperature import fahrenheit_to_celsius
        self.assertAlmostEqual(fahrenheit_to_celsius(32), 0.0)
        self.assertAlmostEqual(fahrenheit_to_celsius(212), 100.0)
        self.assertAlmostEqual(fahrenheit_to_celsius(-40), -40.0)
        self.assertAlmostEqual(fahrenheit_to_celsius(98.6), 37.0)

    def test_round_trip(self):
        from temperature import celsius_to_fahrenheit, fahrenheit_to_celsius
        self.assertEqual(celsius_to_fahrenheit(100), 212)
        for c in (-10, 0, 21.5, 37):
            self.assertAlmostEqual(fahrenheit_to_celsius(celsius_to_fahrenheit(c)), c)
