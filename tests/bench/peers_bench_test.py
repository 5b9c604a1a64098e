#!/usr/bin/env python3
"""peers_bench's summary over several seeds (--seeds): a sitting in which packtune never
reached a peer's best must count against packtune, not vanish from the median."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import peers_bench  # noqa: E402


def sitting(seed, measure, best=0.87, wall=2.0):
    return {"seed": seed, "ratios": {
        "max_pack_1": {"packtune_over_it_to_its_best": 1.0, "its_best": best, "wall_over_packtune": 1.0},
        "optuna": {"packtune_over_it_to_its_best": measure, "its_best": best, "wall_over_packtune": wall}}}


class MedianMeasure(unittest.TestCase):
    def test_odd_count_takes_the_middle(self):
        self.assertAlmostEqual(peers_bench.median_measure([0.9, 0.2, 0.5]), 0.5)

    def test_even_count_averages_the_two_middle(self):
        self.assertAlmostEqual(peers_bench.median_measure([0.2, 0.4, 0.6, 1.0]), 0.5)

    def test_never_reached_ranks_last(self):
        self.assertAlmostEqual(peers_bench.median_measure([None, 0.3, 0.6]), 0.6)

    def test_never_reached_in_the_middle_is_never(self):
        self.assertIsNone(peers_bench.median_measure([None, None, 0.3]))
        self.assertIsNone(peers_bench.median_measure([None, 0.3]))


class SummarizeSeeds(unittest.TestCase):
    def test_every_peer_with_its_measures_and_reach_count(self):
        summary = peers_bench.summarize_seeds([sitting(1, 0.4), sitting(2, None), sitting(3, 0.7)])
        self.assertEqual(set(summary), {"max_pack_1", "optuna"})
        optuna = summary["optuna"]
        self.assertEqual(optuna["seeds"], [1, 2, 3])
        self.assertEqual(optuna["packtune_over_it_to_its_best"], [0.4, None, 0.7])
        self.assertEqual(optuna["reached"], 2)
        self.assertAlmostEqual(optuna["median"], 0.7)

    def test_a_way_missing_from_one_sitting_is_left_out(self):
        runs = [sitting(1, 0.4), sitting(2, 0.5)]
        del runs[1]["ratios"]["optuna"]
        self.assertEqual(set(peers_bench.summarize_seeds(runs)), {"max_pack_1"})


if __name__ == "__main__":
    unittest.main()
