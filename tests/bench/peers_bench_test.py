#!/usr/bin/env python3
"""peers_bench's summary over several seeds (--seeds): a sitting in which packtune never
reached a peer's best must count against packtune, not vanish from the median. And what
--own-samplers and --sweeps hand packtune, and how the samplers are named."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import peers_bench  # noqa: E402
import peers_bench_summary  # noqa: E402
import peers_bench_ways  # noqa: E402


def sitting(seed, measure, best=0.87, wall=2.0):
    return {"seed": seed, "ratios": {
        "max_pack_1": {"packtune_over_it_to_its_best": 1.0, "its_best": best, "wall_over_packtune": 1.0},
        "optuna": {"packtune_over_it_to_its_best": measure, "its_best": best, "wall_over_packtune": wall}}}


class MedianMeasure(unittest.TestCase):
    def test_odd_count_takes_the_middle(self):
        self.assertAlmostEqual(peers_bench_summary.median_measure([0.9, 0.2, 0.5]), 0.5)

    def test_even_count_averages_the_two_middle(self):
        self.assertAlmostEqual(peers_bench_summary.median_measure([0.2, 0.4, 0.6, 1.0]), 0.5)

    def test_never_reached_ranks_last(self):
        self.assertAlmostEqual(peers_bench_summary.median_measure([None, 0.3, 0.6]), 0.6)

    def test_never_reached_in_the_middle_is_never(self):
        self.assertIsNone(peers_bench_summary.median_measure([None, None, 0.3]))
        self.assertIsNone(peers_bench_summary.median_measure([None, 0.3]))


class SameModel(unittest.TestCase):
    SPACE = ["lr", "width", "optimizer"]
    BASE = {"_configs": {0: {"lr": 0.01, "width": 128, "optimizer": "adam", "family": "mlp"},
                         1: {"lr": 0.001, "width": 512, "optimizer": "sgd", "family": "mlp"}},
            "_reports": [{"trial": 0, "budget": 0.25, "t": 2.0}, {"trial": 1, "budget": 0.25, "t": 3.0},
                         {"trial": 1, "budget": 0.75, "t": 6.0}, {"trial": 1, "budget": 2.25, "t": 12.0}]}

    def test_configs_match_on_the_sampled_keys_to_rounding(self):
        self.assertTrue(peers_bench_summary.same_config({"lr": 0.1 + 0.2, "width": 128}, {"lr": 0.3, "width": 128},
                                                        ["lr", "width"]))
        self.assertFalse(peers_bench_summary.same_config({"lr": 0.3, "width": 128}, {"lr": 0.3, "width": 256},
                                                         ["lr", "width"]))
        self.assertFalse(peers_bench_summary.same_config({"lr": 0.3}, {"lr": 0.30001}, ["lr"]))

    def test_the_first_report_of_the_config_at_or_past_the_budget(self):
        config = {"lr": 0.001, "width": 512, "optimizer": "sgd"}
        self.assertEqual(peers_bench_summary.same_model_seconds(self.BASE, config, 0.75, self.SPACE), 6.0)
        self.assertEqual(peers_bench_summary.same_model_seconds(self.BASE, config, 0.5, self.SPACE), 6.0)
        self.assertEqual(peers_bench_summary.same_model_seconds(self.BASE, config, 2.25, self.SPACE), 12.0)

    def test_a_config_pruned_early_or_never_drawn_is_not_reached(self):
        pruned = {"lr": 0.01, "width": 128, "optimizer": "adam"}
        self.assertIsNone(peers_bench_summary.same_model_seconds(self.BASE, pruned, 0.75, self.SPACE))
        self.assertIsNone(peers_bench_summary.same_model_seconds(self.BASE, dict(pruned, lr=0.02), 0.25, self.SPACE))

    def test_best_report_prefers_the_earliest_of_equals(self):
        reports = [{"val_accuracy": 0.8, "t": 5.0, "trial": 1}, {"val_accuracy": 0.8, "t": 3.0, "trial": 2},
                   {"val_accuracy": None, "t": 1.0, "trial": 3}]
        self.assertEqual(peers_bench_summary.best_report(reports)["trial"], 2)


class SummarizeSeeds(unittest.TestCase):
    def test_every_peer_with_its_measures_and_reach_count(self):
        summary = peers_bench_summary.summarize_seeds([sitting(1, 0.4), sitting(2, None), sitting(3, 0.7)])
        self.assertEqual(set(summary), {"max_pack_1", "optuna"})
        optuna = summary["optuna"]
        self.assertEqual(optuna["seeds"], [1, 2, 3])
        self.assertEqual(optuna["packtune_over_it_to_its_best"], [0.4, None, 0.7])
        self.assertEqual(optuna["reached"], 2)
        self.assertAlmostEqual(optuna["median"], 0.7)
        self.assertNotIn("model_median", optuna)

    def test_the_same_model_measure_when_every_sitting_has_it(self):
        runs = [sitting(1, None), sitting(2, 0.5)]
        for r, m in zip(runs, [0.6, 0.4]):
            r["ratios"]["optuna"]["packtune_over_it_to_its_best_model"] = m
        optuna = peers_bench_summary.summarize_seeds(runs)["optuna"]
        self.assertEqual(optuna["model_reached"], 2)
        self.assertAlmostEqual(optuna["model_median"], 0.5)
        self.assertIsNone(optuna["median"])

    def test_the_reverse_measure_is_the_peers_time_to_packtunes_best(self):
        base = {"best_val_accuracy": 0.88, "curve": [[10.0, 0.85], [40.0, 0.88]]}
        self.assertAlmostEqual(peers_bench_summary.reverse_measure(base, {"curve": [[20.0, 0.86], [60.0, 0.881]]})
                               ["it_over_packtune_to_packtune_best"], 1.5)
        self.assertIsNone(peers_bench_summary.reverse_measure(base, {"curve": [[20.0, 0.879]]})
                          ["it_over_packtune_to_packtune_best"])
        self.assertEqual(peers_bench_summary.reverse_measure({"best_val_accuracy": None}, {"curve": []}), {})
        runs = [sitting(1, 0.4), sitting(2, None), sitting(3, 0.7)]
        for r, m in zip(runs, [None, 0.9, None]):
            r["ratios"]["optuna"]["it_over_packtune_to_packtune_best"] = m
        optuna = peers_bench_summary.summarize_seeds(runs)["optuna"]
        self.assertEqual(optuna["reverse_reached"], 1)
        self.assertIsNone(optuna["reverse_median"])
        self.assertNotIn("reverse_median", peers_bench_summary.summarize_seeds([sitting(1, 0.4)])["optuna"])

    def test_a_way_missing_from_one_sitting_is_left_out(self):
        runs = [sitting(1, 0.4), sitting(2, 0.5)]
        del runs[1]["ratios"]["optuna"]
        self.assertEqual(set(peers_bench_summary.summarize_seeds(runs)), {"max_pack_1"})


class LibTorchOf(unittest.TestCase):
    def test_the_first_actors_log_names_it(self):
        with tempfile.TemporaryDirectory() as out:
            self.assertIsNone(peers_bench_ways.libtorch_of(out))
            os.makedirs(os.path.join(out, "logs"))
            with open(os.path.join(out, "logs", "actor-0.log"), "w") as f:
                f.write("[20:27:37] info actor 0: connected to ipc:///tmp/x.ipc (pid 1)\n"
                        "[20:27:38] info actor 0: 50000 training and 10000 validation examples on cpu in 0.66 s, "
                        "1 threads; LibTorch 2.15.0, BLAS mkl, CPU kernels AVX512\n")
            self.assertEqual(peers_bench_ways.libtorch_of(out), "LibTorch 2.15.0, BLAS mkl, CPU kernels AVX512")


class NoiseFloor(unittest.TestCase):
    @staticmethod
    def sitting(seed, curve):
        return {"seed": seed, "ways": {"optuna": {"best_val_accuracy": curve[-1][1], "curve": curve}}}

    def test_each_seed_against_the_next_and_the_last_against_the_first(self):
        runs = [self.sitting(1, [[10.0, 0.85], [30.0, 0.87]]), self.sitting(2, [[20.0, 0.86], [40.0, 0.88]]),
                self.sitting(3, [[5.0, 0.87]])]
        floor = peers_bench_summary.noise_floor(runs)["optuna"]
        self.assertEqual(floor["pairs"], [[1, 2], [2, 3], [3, 1]])
        # Seed 1 never reaches 0.88; seed 2 reaches seed 3's 0.87 at 40 s against its 5 s; seed 3
        # reaches seed 1's 0.87 at 5 s against 30 s.
        self.assertIsNone(floor["measures"][0])
        self.assertAlmostEqual(floor["measures"][1], 8.0)
        self.assertAlmostEqual(floor["measures"][2], 5.0 / 30.0)
        self.assertEqual(floor["reached"], 2)
        self.assertAlmostEqual(floor["median"], 8.0)

    def test_needs_two_seeds_and_the_way_in_each(self):
        self.assertEqual(peers_bench_summary.noise_floor([self.sitting(1, [[1.0, 0.8]])]), {})
        runs = [self.sitting(1, [[1.0, 0.8]]), {"seed": 2, "ways": {}}]
        self.assertEqual(peers_bench_summary.noise_floor(runs), {})


class OwnSamplers(unittest.TestCase):
    DEFAULTS = {"config": "problem.json", "packtune": "packtune"}

    def tuner(self, *argv):
        a = peers_bench.parse_args(list(argv), self.DEFAULTS)
        return a, peers_bench.packtune_tuner(a, 17)

    def test_one_whole_sweep_of_random_draws_by_default(self):
        a, tuner = self.tuner()
        self.assertEqual((a.own_samplers, a.sweeps), (None, 1))
        self.assertEqual(tuner, {"name": "hyperband", "eta": 3})

    def test_own_samplers_is_tpe_over_three_sweeps(self):
        a, tuner = self.tuner("--own-samplers", "--ways", "packtune,optuna")
        self.assertEqual(tuner, {"name": "hyperband", "eta": 3, "trials": 51, "sampler": "tpe"})
        self.assertEqual(peers_bench_ways.sampler_of(a, "packtune", False), "sampler tpe")
        self.assertIn("TPESampler", peers_bench_ways.sampler_of(a, "optuna", False))
        self.assertIn("BasicVariantGenerator", peers_bench_ways.sampler_of(a, "ray_tune", False))

    def test_random_and_sweeps_are_chosen(self):
        a, tuner = self.tuner("--own-samplers", "random", "--sweeps", "2")
        self.assertEqual(tuner, {"name": "hyperband", "eta": 3, "trials": 34, "sampler": "random"})
        self.assertEqual(peers_bench_ways.sampler_of(a, "optuna", False), "RandomSampler")
        _, tuner = self.tuner("--own-samplers", "--sweeps", "1")
        self.assertEqual(tuner, {"name": "hyperband", "eta": 3, "sampler": "tpe"})

    def test_the_asynchronous_tuner_gets_the_sweeps_trials(self):
        _, tuner = self.tuner("--tuner", "async_hyperband", "--sweeps", "2")
        self.assertEqual(tuner, {"name": "async_hyperband", "eta": 3, "trials": 34})

    def test_peers_given_packtunes_configs_say_so(self):
        a, _ = self.tuner()
        self.assertEqual(peers_bench_ways.sampler_of(a, "optuna", True), "packtune's configs, in its trial order")

    def test_trials_text(self):
        self.assertEqual(peers_bench_summary.trials_text({"trials": 17}), "17 trials")
        self.assertEqual(peers_bench_summary.trials_text({"trials": 51, "sweeps": 3, "sweep_trials": 17}),
                         "3 sweeps of 17 = 51 trials")

    def test_samplers_text_counts_packtunes_modelled_configs(self):
        r = {"same_configs": False, "samplers": {"packtune": "sampler tpe", "optuna": "RandomSampler"},
             "ways": {"packtune": {"trials": 51, "modelled_configs": 33}, "optuna": {"trials": 52}}}
        self.assertEqual(peers_bench_summary.samplers_text(r), "each way its own sampler: packtune: sampler tpe "
                         "(33 of 51 configs modelled, the rest drawn at random); optuna: RandomSampler")
        self.assertNotIn("33", peers_bench_summary.samplers_text(r, counts=False))
        self.assertIn("packtune drew", peers_bench_summary.samplers_text(dict(r, same_configs=True)))

    def test_modelled_configs_counts_start_jobs_not_drawn_at_random(self):
        jobs = [{"job": {"kind": "start", "trial": 0, "why": {"random": True, "sampler": "tpe"}}},
                {"result": {"trial": 0}},
                {"job": {"kind": "start", "trial": 1, "why": {"budget": 0.25, "good": [0]}}},
                {"job": {"kind": "resume", "trial": 1}},
                {"job": {"kind": "start", "trial": 2, "why": {"budget": 0.75}}}]
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "journal.jsonl"), "w") as f:
                f.write("".join(json.dumps(j) + "\n" for j in jobs))
            self.assertEqual(peers_bench_ways.modelled_configs(d), 2)


if __name__ == "__main__":
    unittest.main()
