#!/usr/bin/env python3
"""hyperband_bench's rules for what a run's reports must show: a way's rounds compared bit for
bit, and which differences fail the bench on a CPU and on a GPU (docs/reproducibility.md)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import hyperband_bench as hb  # noqa: E402


def report(trial, budget, val_loss, val_accuracy=0.8, train_loss=0.5):
    return {"trial": trial, "budget": budget, "val_loss": val_loss, "val_accuracy": val_accuracy,
            "train_loss": train_loss}


FIRST = [report(0, 0.25, 0.61), report(1, 0.25, 0.72), report(1, 0.75, 0.55)]


class RepeatDifferences(unittest.TestCase):
    def test_the_same_reports_repeat(self):
        r = hb.repeat_differences(FIRST, [list(FIRST), list(reversed(FIRST))])
        self.assertEqual(r, {"rounds": 3, "equal": True, "metrics_differing": 0, "pairs_only_in_one_run": 0})

    def test_a_last_bit_counts(self):
        other = [report(0, 0.25, 0.61), report(1, 0.25, 0.72 + 1e-16 * 8), report(1, 0.75, 0.55)]
        r = hb.repeat_differences(FIRST, [other])
        self.assertFalse(r["equal"])
        self.assertEqual(r["metrics_differing"], 1)

    def test_a_rung_that_promoted_another_trial(self):
        other = [report(0, 0.25, 0.61), report(1, 0.25, 0.72), report(0, 0.75, 0.5)]
        r = hb.repeat_differences(FIRST, [other])
        self.assertEqual((r["equal"], r["metrics_differing"], r["pairs_only_in_one_run"]), (False, 0, 2))


class Judge(unittest.TestCase):
    SAME = {"rounds": 2, "equal": True, "metrics_differing": 0, "pairs_only_in_one_run": 0}
    DIFFERENT = {"rounds": 2, "equal": False, "metrics_differing": 5, "pairs_only_in_one_run": 2}

    def test_a_cpu_fails_on_ways_apart_or_any_way_that_does_not_repeat(self):
        self.assertEqual(hb.judge(True, 0.0, {"packed": self.SAME, "max_pack_1": self.SAME}), [])
        self.assertEqual(len(hb.judge(True, 0.01, {})), 1)
        self.assertEqual(len(hb.judge(True, 0.0, {"packed": self.DIFFERENT})), 1)

    def test_a_gpu_judges_only_one_trial_per_actor_repeating(self):
        self.assertEqual(hb.judge(False, 0.7, {"packed": self.DIFFERENT, "max_pack_1": self.SAME}), [])
        failures = hb.judge(False, 0.0, {"packed": self.SAME, "max_pack_1": self.DIFFERENT})
        self.assertEqual(len(failures), 1)
        self.assertIn("max_pack_1", failures[0])


if __name__ == "__main__":
    unittest.main()
