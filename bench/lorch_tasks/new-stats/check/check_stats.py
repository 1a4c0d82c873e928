"""Behavioural check for T-001 (kept outside the workspace: the agent never sees it)."""
import unittest


class StatsCheck(unittest.TestCase):
    def test_mean(self):
        from stats import mean
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)
        self.assertEqual(mean([5]), 5)
        self.assertAlmostEqual(mean([0.5, 1.5, -2]), 0.0)

    def test_median(self):
        from stats import median
        self.assertEqual(median([3, 1, 2]), 2)
        self.assertEqual(median([4, 1, 3, 2]), 2.5)
        self.assertEqual(median([7]), 7)

    def test_empty(self):
        from stats import mean, median
        with self.assertRaises(ValueError):
            mean([])
        with self.assertRaises(ValueError):
            median([])
