"""packtune.simulate: a Python function served through the exec:CMD protocol."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Tuple

import pytest

import packtune

SPACE = {"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1}}
CONFIG = {"seed": 3, "metric": "val_accuracy", "space": SPACE}


def accuracy(config: Dict[str, Any], budget: float) -> float:
    return 0.9 - 0.05 * abs(math.log10(config["lr"]) + 2) - 0.3 * math.exp(-budget)


def test_every_result_is_the_function_value() -> None:
    calls: List[Tuple[int, float, float, float]] = []
    configs: Dict[int, Dict[str, Any]] = {}

    def objective(config: Dict[str, Any], budget: float, trial: int, start: float) -> float:
        calls.append((trial, budget, start, accuracy(config, budget)))
        configs[trial] = config
        return accuracy(config, budget)

    sim = packtune.simulate(CONFIG, objective=objective, tuner="asha", min_budget=1, max_budget=9, eta=3,
                            trials=12, workers=2)
    results = sim.results()
    assert set(results["trial"]) == set(range(12)) == set(configs)
    for _, row in results.iterrows():
        assert row["metric"] == pytest.approx(accuracy(configs[row["trial"]], row["budget"]), abs=1e-12)
    # A promotion starts from the budget the trial had reached; a new trial from 0.
    assert {start for trial, budget, start, _ in calls if budget == 1} == {0}
    assert any(start == 1 for _, budget, start, _ in calls if budget == 3)
    best = sim.best()
    top = results[results["budget"] == results["budget"].max()]
    assert best["metric"] == pytest.approx(top["metric"].max())
    assert best["config"] == configs[best["trial"]]
    assert sim.summary["trials"] == 12 and sim.summary["workers"] == 2


def test_costs_are_simulated_seconds() -> None:
    # One worker, five trials, each a job of 7 simulated seconds: 35 in all.
    sim = packtune.simulate(CONFIG, objective=lambda config, budget: (accuracy(config, budget), 7.0),
                            tuner="random", trials=5, max_budget=2)
    assert sim.summary["time"] == pytest.approx(35.0)
    assert len(sim.results()) == 5


def test_the_objective_error_is_raised_after_the_simulation_stops() -> None:
    def objective(config: Dict[str, Any], budget: float, **extra: Any) -> float:
        if extra["trial"] == 2:
            raise KeyError("trial two")
        return accuracy(config, budget)

    with pytest.raises(KeyError, match="trial two"):
        packtune.simulate(CONFIG, objective=objective, tuner="random", trials=5, max_budget=1)
    with pytest.raises(ValueError, match="finite"):
        packtune.simulate(CONFIG, objective=lambda config, budget: float("nan"), tuner="random", trials=2,
                          max_budget=1)


def test_bad_options_raise_config_error_with_the_cli_line() -> None:
    with pytest.raises(packtune.ConfigError) as caught:
        packtune.simulate(CONFIG, objective=accuracy, tuner="random", trials=2, min_budget=5, max_budget=1)
    assert caught.value.line.startswith("packtune: error: ") and "budget" in caught.value.line
    with pytest.raises(packtune.ConfigError, match="no_such_tuner"):
        packtune.simulate(CONFIG, objective=accuracy, tuner="no_such_tuner", trials=2, max_budget=1)
