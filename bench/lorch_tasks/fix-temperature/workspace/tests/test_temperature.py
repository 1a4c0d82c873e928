import unittest

from temperature import celsius_to_fahrenheit


class CelsiusToFahrenheitTest(unittest.TestCase):
    def test_fixed_points(self):
        self.assertEqual(celsius_to_fahrenheit(0), 32)
        self.assertEqual(celsius_to_fahrenheit(100), 212)


if __name__ == "__main__":
    unittest.main()
