"""Shared fixtures: the binary under test, a profile cache of the tests' own, and a small real
run on a slice of Fashion-MNIST that several tests read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict

import pytest

import packtune


@pytest.fixture(scope="session", autouse=True)
def own_profile_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    # A run's throughput profiles must not come from, or go to, the user's cache.
    os.environ["PACKTUNE_CACHE_DIR"] = str(tmp_path_factory.mktemp("profile-cache"))


@pytest.fixture(scope="session")
def binary() -> Path:
    """The packtune binary under test (run_pytest.sh sets PACKTUNE_BIN)."""
    return packtune.find_binary()


def tiny_config(**changes: Any) -> Dict[str, Any]:
    """Random search over an MLP's learning rate: 3000 training images, one epoch in two
    reports, one actor; a few seconds on two cores."""
    config: Dict[str, Any] = {
        "name": "tiny",
        "seed": 5,
        "budget": {"unit": "epochs", "max": 1, "report_every": 0.5},
        "tuner": {"name": "random", "trials": 3},
        "actors": 1,
        "data": {"train_size": 3000, "validation_size": 1000},
        "model": {"family": "mlp", "depth": 1, "width": 64, "batch_size": 64, "optimizer": "adam"},
        "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01},
                  "dropout": {"type": "choice", "values": [0.0, 0.2]}},
    }
    config.update(changes)
    return config


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory, binary: Path) -> packtune.Run:
    """A finished run of tiny_config with four trials (the override)."""
    out = tmp_path_factory.mktemp("tiny") / "out"
    return packtune.run(tiny_config(), out=out, trials=4, progress="none")
