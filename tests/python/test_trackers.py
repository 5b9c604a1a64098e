"""`packtune export --mlflow` and `--tensorboard` of a real run, read back by MLflow's client
and TensorBoard's event reader."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

import packtune
from packtune.trackers.steps import step_scale


def export(binary: Path, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), "export", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=240)


def by_trial(run: packtune.Run) -> Dict[int, List[dict]]:
    trials: Dict[int, List[dict]] = {}
    for report in run.reports():
        trials.setdefault(report["trial"], []).append(report)
    return trials


def test_step_scale_makes_budgets_whole() -> None:
    assert step_scale([1, 2, 9]) == 1
    assert step_scale([0.5, 1.0]) == 10
    assert step_scale([0.25, 0.75, 2.25]) == 100


def test_mlflow_export_is_read_back_by_mlflow(binary: Path, tiny_run: packtune.Run, tmp_path: Path) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    done = export(binary, str(tiny_run.dir), "--mlflow", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and "exported 4 trials of tiny to MLflow" in done.stdout
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    frame = mlflow.search_runs(experiment_names=["tiny"])
    assert len(frame) == 5
    parent = frame[frame["tags.mlflow.parentRunId"].isna()]
    children = frame[frame["tags.mlflow.parentRunId"].notna()]
    assert len(parent) == 1 and len(children) == 4
    parent_id = parent["run_id"].iloc[0]
    assert set(children["tags.mlflow.parentRunId"]) == {parent_id}
    best = tiny_run.best()
    assert best is not None
    assert parent["tags.packtune.best_trial"].iloc[0] == str(best["trial"])
    assert parent["metrics.best_val_accuracy"].iloc[0] == pytest.approx(best["value"])
    assert parent["params.tuner.trials"].iloc[0] == "4"
    client = MlflowClient(uri)
    assert {a.path for a in client.list_artifacts(parent_id)} >= {"report.html", "config.json", "best.json"}
    reports = by_trial(tiny_run)
    for _, child in children.iterrows():
        trial = int(child["tags.packtune.trial"])
        assert child["tags.mlflow.runName"] == f"trial {trial}"
        config = reports[trial][0]["config"]
        assert float(child["params.lr"]) == config["lr"] and float(child["params.dropout"]) == config["dropout"]
        assert child["params.family"] == "mlp"
        for metric in ("val_accuracy", "val_loss", "train_loss", "budget"):
            history = sorted(client.get_metric_history(child["run_id"], metric), key=lambda m: m.step)
            # Steps are budgets times 10 (budgets 0.5 and 1).
            assert [(m.step, m.value) for m in history] == [
                (round(r["budget"] * 10), pytest.approx(r[metric])) for r in reports[trial]]
        assert (child["tags.packtune.best"] == "true") == (trial == best["trial"])
    best_child = children[children["tags.packtune.best"] == "true"]
    assert best_child["metrics.test_accuracy"].iloc[0] == pytest.approx(best["test"]["test_accuracy"])

    # Again: the same runs, each step still once.
    again = export(binary, str(tiny_run.dir), "--mlflow", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert set(mlflow.search_runs(experiment_names=["tiny"])["run_id"]) == set(frame["run_id"])
    for run_id in children["run_id"]:
        assert len(client.get_metric_history(run_id, "val_accuracy")) == 2


def test_mlflow_export_to_a_uri(binary: Path, tiny_run: packtune.Run, tmp_path: Path) -> None:
    import mlflow

    uri = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    done = export(binary, str(tiny_run.dir), "--mlflow", uri, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # Not the default store (MLflow's own default puts this store's artifacts in ./mlruns).
    assert not (tmp_path / "mlruns" / "mlflow.db").exists()
    mlflow.set_tracking_uri(uri)
    assert len(mlflow.search_runs(experiment_names=["tiny"])) == 5


def test_tensorboard_export_is_read_back_by_tensorboard(binary: Path, tiny_run: packtune.Run, tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import metadata, plugin_data_pb2
    from tensorboard.util import tensor_util

    out = tmp_path / "tb"
    done = export(binary, str(tiny_run.dir), "--tensorboard", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    reports = by_trial(tiny_run)
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [f"trial-{t}" for t in range(4)]
    for trial, rows in reports.items():
        folder = out / f"trial-{trial}"
        assert len(list(folder.glob("events.out.tfevents.*"))) == 1
        events = EventAccumulator(str(folder))
        events.Reload()
        for metric in ("val_accuracy", "val_loss", "train_loss", "budget"):
            points = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in events.Tensors(metric)]
            assert points == [(round(r["budget"] * 10), pytest.approx(r[metric], rel=1e-6)) for r in rows]
        content = events.PluginTagToContent(metadata.PLUGIN_NAME)[metadata.SESSION_START_INFO_TAG]
        session = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
        assert session.hparams["lr"].number_value == rows[0]["config"]["lr"]
        assert session.hparams["family"].string_value == "mlp"
    root = EventAccumulator(str(out))
    root.Reload()
    content = root.PluginTagToContent(metadata.PLUGIN_NAME)[metadata.EXPERIMENT_TAG]
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content).experiment
    assert {"lr", "dropout", "width"} <= {h.name for h in experiment.hparam_infos}
    assert "val_accuracy" in {m.name.tag for m in experiment.metric_infos}

    # The same run again: nothing is written twice (it would show as a second point).
    again = export(binary, str(tiny_run.dir), "--tensorboard", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    for trial in reports:
        assert len(list((out / f"trial-{trial}").glob("events.out.tfevents.*"))) == 1
    # Another run's export into the same OUT: TensorBoard would mix them, so it is refused.
    other = tmp_path / "other"
    shutil.copytree(tiny_run.dir, other)
    refused = export(binary, str(other), "--tensorboard", str(out), cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.startswith("packtune: error: --tensorboard: ")
    assert refused.stderr.count("\n") == 1 and "empty folder" in refused.stderr


def test_export_errors_are_one_line(binary: Path, tiny_run: packtune.Run, tmp_path: Path) -> None:
    missing = export(binary, str(tmp_path / "none"), "--tensorboard", str(tmp_path / "tb"), cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "--out of a packtune run" in missing.stderr
    # A Python without MLflow (no site packages): exit 1 naming what is missing and the fix.
    bare = tmp_path / "bare-python"
    bare.write_text('#!/bin/sh\nexec /usr/bin/python3 -S -s "$@"\n')
    bare.chmod(0o755)
    without = export(binary, str(tiny_run.dir), "--mlflow", cwd=tmp_path, PACKTUNE_PYTHON=str(bare))
    assert without.returncode == 1 and without.stderr.count("\n") == 1
    assert "needs the Python package mlflow" in without.stderr and "scripts/setup.sh" in without.stderr
    # DIR after --mlflow is DIR, not a URI: the line is about --output, not a missing DIR.
    both = export(binary, "--mlflow", str(tiny_run.dir), "--output", "x.csv", cwd=tmp_path)
    assert both.returncode == 2 and "--output are for the CSV" in both.stderr


def test_the_api_writes_what_the_cli_writes(tiny_run: packtune.Run, tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tiny_run.to_tensorboard(tmp_path / "tb")
    events = EventAccumulator(str(tmp_path / "tb" / "trial-0"))
    events.Reload()
    assert len(events.Tensors("val_accuracy")) == 2


def test_an_mlflow_batch_that_failed_is_logged_once_when_tried_again(
        tiny_run: packtune.Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow.tracking import MlflowClient

    from packtune.trackers import mlflow_export

    # A report per log_batch, so that the second call fails inside the first trial's reports.
    monkeypatch.setattr(mlflow_export, "_MAX_METRICS", 5)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sync = mlflow_export.MlflowSync(tiny_run, uri)
    log_batch, calls = sync.client.log_batch, []

    def flaky(*args: object, **kwargs: object) -> None:
        if kwargs.get("metrics"):
            calls.append(1)
            if len(calls) == 2:
                raise ConnectionError("the server restarts")
        log_batch(*args, **kwargs)

    monkeypatch.setattr(sync.client, "log_batch", flaky)
    with pytest.raises(ConnectionError):
        sync.sync()
    assert sync.sync() == len(tiny_run.reports()) - 1
    client = MlflowClient(uri)
    for trial, reports in by_trial(tiny_run).items():
        steps = [m.step for m in client.get_metric_history(sync.children[trial], "budget")]
        assert sorted(steps) == sorted(round(r["budget"] * sync.scale) for r in reports)
