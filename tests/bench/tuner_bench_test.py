#!/usr/bin/env python3
"""bench/tuner_functions.py and the logic of bench/tuner_bench.py that decides what a figure
means: each function reaches its published optimum at the max budget, answers are keyed by
(seed, trial, budget) alone, the exec protocol answers line by line; regret traces, medians and
ranks. Needs numpy (run by Debian's python3)."""
import io
import json
import math
import os
import stat
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import tuner_bench_rules  # noqa: E402
import tuner_bench_runs  # noqa: E402
import tuner_bench_worker  # noqa: E402
import tuner_functions as tf  # noqa: E402


def test_optima():
    branin = tf.FUNCTIONS["branin"]
    for x1, x2 in ((-math.pi, 12.275), (math.pi, 2.275), (9.42478, 2.475)):
        assert abs(branin.evaluate({"x1": x1, "x2": x2}, 81) - branin.optimum) < 1e-5
    hartmann = tf.FUNCTIONS["hartmann6"]
    best = dict(zip((f"x{j}" for j in range(6)), (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573)))
    assert abs(hartmann.evaluate(best, 81) - hartmann.optimum) < 1e-5
    ones = tf.FUNCTIONS["counting_ones"]
    all_ones = {k: 1 for k in ones.space}
    assert ones.evaluate(all_ones, 729, seed=3, trial=5) == ones.optimum
    # The fidelity bias: below the max budget the value at the optimum moves.
    assert abs(branin.evaluate({"x1": math.pi, "x2": 2.275}, 1) - branin.optimum) > 0.1
    assert abs(hartmann.evaluate(best, 1) - hartmann.optimum) > 0.1


def test_noise_is_keyed():
    ones = tf.FUNCTIONS["counting_ones"]
    half = {k: (1 if k.startswith("cat") else 0.5) for k in ones.space}
    a = ones.evaluate(half, 27, seed=1, trial=2)
    assert a == ones.evaluate(half, 27, seed=1, trial=2)
    assert a != ones.evaluate(half, 27, seed=2, trial=2) or a != ones.evaluate(half, 27, seed=1, trial=3)
    for name, f in tf.FUNCTIONS.items():
        for k, d in f.space.items():
            assert d["type"] in ("uniform", "choice"), (name, k)


def test_serve():
    requests = [{"trial": 0, "config": {"x1": math.pi, "x2": 2.275}, "budget": 81, "from": 0},
                {"trial": 1, "config": {"x1": 0.0, "x2": 0.0}, "budget": 3, "from": 1}]
    out = io.StringIO()
    tf.serve(tf.FUNCTIONS["branin"], 0, io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(answers) == 2 and abs(answers[0]["metric"] - tf.FUNCTIONS["branin"].optimum) < 1e-5


def test_trace_median_ranks():
    fn = {"max_budget": 81, "optimum": 1.0}
    # Only max-budget results count, and only improvements enter the trace.
    results = [(5, 3, 0.5), (10, 81, 3.0), (12, 81, 4.0), (20, 81, 2.0)]
    trace = tuner_bench_rules.trace_of(results, fn)
    assert trace == [[10, 2.0], [20, 1.0]], trace
    assert tuner_bench_rules.regret_at(trace, 9) is None and tuner_bench_rules.regret_at(trace, 15) == 2.0
    assert tuner_bench_rules.median([1, None, 3]) == 3 and tuner_bench_rules.median([None, None, 1]) is None
    assert tuner_bench_rules.median([1, 2, 3, 4]) == 2.5
    assert tuner_bench_rules.ranks([0.5, None, 0.5, 0.1]) == [2.5, 4.0, 2.5, 1.0]
    # A trial limit never ends a run before the horizon: 4 workers in 1620 train at most 80
    # trials to 81 or 6480 jobs of budget 1, and a worker's last trial may start before 1620.
    f = {"min_budget": 1, "max_budget": 81}
    assert tuner_bench_runs.trial_limit("random", f, 4, 1620) == 84
    assert tuner_bench_runs.trial_limit("asha", f, 4, 1620) == 6484
    # Under hyperband, whole sweeps (143 trials for 1 ... 81 with eta 3).
    assert tuner_bench_runs.trial_limit("hyperband", f, 4, 1620, sweep=143) == 143 * 46


def test_reuse_takes_the_peers_runs_only():
    """--reuse keeps the peers' runs and runs packtune's again (after a rebuild), and the peers
    it keeps carry the versions of the output they come from."""
    old = {"workers": 4, "time_budget": 20.0, "eta": tuner_bench_rules.ETA, "date": "then",
           "versions": {"optuna": "4.0", "dehb": "0.1"},
           "functions": {"branin": {"runs": {
               "asha": {"1": {"trace": [], "final_regret": None}},
               "optuna_tpe": {"1": {"trace": [[1, 0.5]], "final_regret": 0.5},
                              "2": {"trace": [], "final_regret": None}}}}}}
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "old.json")
        with open(path, "w") as f:
            json.dump(old, f)
        a = types.SimpleNamespace(reuse=path, workers=4, time_budget=20.0)
        tools = ["asha", "optuna_tpe", "optuna_random"]
        runs = {"branin": {t: {} for t in tools}}
        count, versions = tuner_bench_runs.reuse_runs(a, runs)
    assert count == 2 and runs["branin"]["asha"] == {} and sorted(runs["branin"]["optuna_tpe"]) == [1, 2]
    # optuna_random runs now with optuna 5.0 beside optuna_tpe's runs of 4.0: a note, not one version.
    now = {"optuna": "5.0"}
    notes = tuner_bench_runs.reused_versions(runs, tools, [1, 2], now, versions)
    assert now == {"optuna": "5.0"} and len(notes) == 1 and "4.0" in notes[0], notes
    # Every optuna run taken from the old output: its version is the old one.
    notes = tuner_bench_runs.reused_versions(runs, ["asha", "optuna_tpe"], [1, 2], now, versions)
    assert now == {"optuna": "4.0"} and notes == []


def test_simulated_time():
    """The peers' time model, with a scripted ask/tell: W workers, a trial that goes on pays
    only the budget it adds, jobs ending together finish in the order they started, and
    nothing ending after the horizon is finished."""
    trials = []

    def start(now):
        trials.append(now)
        return 3, (len(trials) - 1, 3)

    def finish(now, job):
        trial, budget = job
        then = (6, (trial, 9)) if trial == 0 and budget == 3 else None
        return budget, f"t{trial}", then

    results, jobs = tuner_bench_worker.simulate(2, 12, start, finish)
    assert results == [(3, 3, "t0"), (3, 3, "t1"), (6, 3, "t2"), (9, 9, "t0"), (9, 3, "t3"), (12, 3, "t4"),
                       (12, 3, "t5")], results
    assert jobs == 7 and trials == [0, 0, 3, 6, 9, 9, 12, 12]
    # The rungs of Optuna's pruner are packtune's: anchored at the max budget.
    assert tuner_bench_worker.rung_budgets(types.SimpleNamespace(min_budget=1, max_budget=81)) == [1, 3, 9, 27, 81]
    assert [round(b, 6) for b in tuner_bench_worker.rung_budgets(
        types.SimpleNamespace(min_budget=1, max_budget=10))] == [1.111111, 3.333333, 10]


def fake_packtune(work, body):
    path = os.path.join(work, "packtune")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def test_run_packtune_reads_to_the_summary_or_stops_past_the_horizon():
    fn = {"min_budget": 1, "max_budget": 81, "optimum": 0.0}
    events = ('echo \'{"event":"start","trial":0,"budget":81,"t":0}\'\n'
              'echo \'{"event":"result","trial":0,"budget":81,"metric":0.5,"t":81}\'\n')
    with tempfile.TemporaryDirectory() as work:
        def run(body):
            a = types.SimpleNamespace(packtune=fake_packtune(work, body), python="python3", workers=1)
            return tuner_bench_runs.run_packtune(a, work, "branin", fn, "asha", 1, 100)

        # After its summary packtune waits for the function's process to exit: that wait is no
        # failure, whatever it takes, and its exit status counts.
        assert run(events + 'echo \'{"event":"summary"}\'\nsleep 0.5\n') == \
            ([[81, 0.5]], {"jobs_started": 1, "jobs_done": 1})
        try:
            run(events + 'echo \'{"event":"summary"}\'\nexit 3\n')
            raise AssertionError("an exit status of 3 after the summary passed")
        except tuner_bench_runs.BenchError as e:
            assert "exited 3" in str(e), e
        # The first event past the horizon ends the run: it is stopped, never awaited.
        past = events + 'echo \'{"event":"start","trial":1,"budget":81,"t":101}\'\nexec sleep 1000\n'
        assert run(past) == ([[81, 0.5]], {"jobs_started": 1, "jobs_done": 1})


def main():
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_")]
    for t in tests:
        t()
    print(f"{len(tests)} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
