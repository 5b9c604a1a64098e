"""Export while a run goes on (packtune.run's mlflow= and tensorboard=, the Follower, and
`packtune export --follow`), and across a kill -9 and --resume: every report once in MLflow and
in TensorBoard."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

import packtune
from conftest import tiny_config
from packtune.trackers.follow import Follower


def mlflow_steps(uri: str, experiment: str) -> Dict[int, List[int]]:
    """Each trial's logged steps of the metric ``budget``, in the order MLflow returns them."""
    import mlflow
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(uri)
    frame = mlflow.search_runs(experiment_names=[experiment])
    client = MlflowClient(uri)
    children = frame[frame["tags.mlflow.parentRunId"].notna()]
    return {int(row["tags.packtune.trial"]): sorted(m.step for m in client.get_metric_history(row["run_id"], "budget"))
            for _, row in children.iterrows()}


def tensorboard_steps(out: Path) -> Dict[int, List[int]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    steps = {}
    for folder in sorted(out.glob("trial-*")):
        events = EventAccumulator(str(folder))
        events.Reload()
        steps[int(folder.name[6:])] = sorted(e.step for e in events.Tensors("budget"))
    return steps


def report_steps(run: packtune.Run) -> Dict[int, List[int]]:
    steps: Dict[int, List[int]] = {}
    for report in run.reports():
        steps.setdefault(report["trial"], []).append(round(report["budget"] * 10))
    return {trial: sorted(s) for trial, s in steps.items()}


def held_run(binary: Path, tmp_path: Path, name: str, trials: int, reports: int) -> Tuple[subprocess.Popen, Path, Path]:
    """`packtune run` of tiny_config, its driver held right after its `reports`-th report
    (PACKTUNE_TEST_HOLD): returns the driver, the results folder and the hold file."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(tiny_config(name=name)))
    out, hold = tmp_path / "out", tmp_path / "hold"
    driver = subprocess.Popen([str(binary), "run", str(config), "--out", str(out), "--trials", str(trials), "--quiet"],
                              env={**os.environ, "PACKTUNE_TEST_HOLD": f"driver.reported#{reports}:{hold}"},
                              stdout=subprocess.DEVNULL)
    for _ in range(1200):  # a bound on a hung run, not a window the test depends on
        if hold.exists() and hold.read_text().strip() or driver.poll() is not None:
            break
        time.sleep(0.1)
    assert driver.poll() is None and hold.exists(), f"the driver did not reach report {reports}"
    return driver, out, hold


def test_run_exports_while_it_runs(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run = packtune.run(tiny_config(name="live"), out=tmp_path / "out", trials=3, progress="none",
                       mlflow=uri, tensorboard=tmp_path / "tb")
    expected = report_steps(run)
    assert len(expected) == 3
    assert mlflow_steps(uri, "live") == expected
    assert tensorboard_steps(tmp_path / "tb") == expected


def test_a_killed_run_resumed_has_each_step_once(binary: Path, tmp_path: Path) -> None:
    import mlflow

    # The driver stops right after its third report, so the export has part of the run.
    driver, out, hold = held_run(binary, tmp_path, "resumed", trials=4, reports=3)
    tb, uri = tmp_path / "tb", f"sqlite:///{tmp_path / 'mlflow.db'}"
    follower = Follower(out, mlflow=uri, tensorboard=tb)
    # The driver may hold its third line in a buffer still: the export has what the file has.
    before = len(packtune.load(out).reports())
    assert 1 <= before <= follower.sync() <= 3
    follower.stop()
    os.kill(int(hold.read_text()), signal.SIGKILL)
    driver.wait()
    mlflow.set_tracking_uri(uri)
    parent = mlflow.search_runs(experiment_names=["resumed"], filter_string="tags.`packtune.trial` IS NULL")
    assert list(parent["status"]) == ["KILLED"]

    run = packtune.resume(out, progress="none", mlflow=uri, tensorboard=tb)
    expected = report_steps(run)
    assert sum(map(len, expected.values())) == 8
    assert mlflow_steps(uri, "resumed") == expected
    assert tensorboard_steps(tb) == expected
    parent = mlflow.search_runs(experiment_names=["resumed"], filter_string="tags.`packtune.trial` IS NULL")
    assert list(parent["status"]) == ["FINISHED"] and len(mlflow.search_runs(experiment_names=["resumed"])) == 5


class FlakyStore:
    """A store whose first syncs fail, as a tracking server that restarts."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls, self.finished = failures, 0, False

    def sync(self) -> int:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError("the server restarts")
        return 1

    def finish(self) -> None:
        self.finished = True


def test_a_sync_that_fails_is_tried_again(tmp_path: Path) -> None:
    follower = Follower(tmp_path, interval=0.01)
    store = FlakyStore(failures=2)
    follower.syncs.append(store)
    follower.start()
    for _ in range(3000):  # a bound on a stuck thread, not a window the test depends on
        if store.calls > 2:
            break
        time.sleep(0.01)
    follower.stop()
    assert store.calls > 3 and store.finished and follower.error is None
    # A store that fails to the end: stop() raises the last sync's error and ends nothing.
    follower = Follower(tmp_path, interval=0.01)
    store = FlakyStore(failures=10**9)
    follower.syncs.append(store)
    with pytest.raises(ConnectionError, match="the server restarts"):
        follower.stop()
    assert not store.finished


def test_a_refused_export_stops_the_run_before_it_starts(tmp_path: Path) -> None:
    # An OUT with another run's event files: refused by the run's exporter before anything trains.
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "events.out.tfevents.1.other").write_bytes(b"")
    with pytest.raises(packtune.ConfigError, match="--tensorboard: .* holds TensorBoard event files already"):
        packtune.run(tiny_config(name="refused", data={"train_size": 1000, "validation_size": 500}),
                     out=tmp_path / "out", trials=2, progress="none", tensorboard=tmp_path / "tb")
    assert not (tmp_path / "out").exists()


def test_export_follow_on_the_command_line(binary: Path, tmp_path: Path) -> None:
    driver, out, hold = held_run(binary, tmp_path, "followed", trials=3, reports=2)
    tb = tmp_path / "tb"
    # Started mid-run, it follows until the journal says finished, after the hold is let go.
    follower = subprocess.Popen([str(binary), "export", str(out), "--tensorboard", str(tb), "--follow"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    hold.unlink()
    assert driver.wait(timeout=240) == 0
    stdout, stderr = follower.communicate(timeout=240)
    assert follower.returncode == 0, stderr
    assert "exported 3 trials of followed" in stdout
    assert tensorboard_steps(tb) == report_steps(packtune.load(out))
    refused = subprocess.run([str(binary), "export", str(out), "--follow"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--follow goes with one of --mlflow and --tensorboard" in refused.stderr
