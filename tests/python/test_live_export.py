"""`packtune run` exporting as it runs (the config's `export`, or --mlflow and --tensorboard):
read back by MLflow's client and TensorBoard's event reader while the run is held and after a
kill -9 and --resume, each report once; a store it cannot write to stops it before it starts;
pbt's exploits as tags and its perturbed hyper-parameters as metrics."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Dict

import packtune
from conftest import tiny_config
from test_follow import mlflow_steps, report_steps, tensorboard_steps


def run_cli(binary: Path, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), "run", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=240)


def write_config(folder: Path, **changes: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    path.write_text(json.dumps(tiny_config(**changes)))
    return path


def parent_status(uri: str, experiment: str) -> Dict[str, str]:
    import mlflow

    mlflow.set_tracking_uri(uri)
    frame = mlflow.search_runs(experiment_names=[experiment])
    return {str(row["run_id"]): str(row["status"]) for _, row in frame.iterrows()
            if not isinstance(row["tags.mlflow.parentRunId"], str)}


def test_the_config_exports_while_it_runs_and_resume_goes_on(binary: Path, tmp_path: Path) -> None:
    # Stores relative to the config's folder; the run started from elsewhere.
    # One trial at a time, so that the hold after the second report finds the first written
    # (the driver flushes results.jsonl between the messages it takes) and its trial unfinished.
    config = write_config(tmp_path / "exp", name="exported", export={"mlflow": "store", "tensorboard": "tb"},
                          max_pack=1, fuse="never")
    uri, tb = f"sqlite:///{tmp_path / 'exp' / 'store' / 'mlflow.db'}", tmp_path / "exp" / "tb"
    out, hold = tmp_path / "out", tmp_path / "hold"
    driver = subprocess.Popen([str(binary), "run", str(config), "--out", str(out), "--trials", "4", "--quiet"],
                              cwd=tmp_path, env={**os.environ, "PACKTUNE_TEST_HOLD": f"driver.reported#2:{hold}"},
                              stdout=subprocess.DEVNULL)
    steps: Dict[int, Any] = {}
    for _ in range(1200):  # bounds on a hung run, not windows the test depends on
        if hold.exists() and hold.read_text().strip() or driver.poll() is not None:
            break
        time.sleep(0.1)
    assert driver.poll() is None and hold.exists(), "the driver did not reach its second report"
    # Held after its second report, the run's exporter has the first: a trial at half its budget.
    for _ in range(600):
        try:
            steps = mlflow_steps(uri, "exported")
        except KeyError:  # no trial's run yet: the frame has no parent column
            steps = {}
        # TensorBoard's sync comes after MLflow's.
        if steps and tb.is_dir() and any(tensorboard_steps(tb).values()):
            break
        time.sleep(0.2)
    assert list(steps.values()) == [[5]]
    assert tensorboard_steps(tb) == steps
    config_as_run = packtune.load(out).config
    assert config_as_run["export"] == {"mlflow": str(tmp_path / "exp" / "store"), "tensorboard": str(tb)}
    os.kill(int(hold.read_text()), signal.SIGKILL)
    driver.wait()

    # The config as run has the export: --resume from another folder goes on in the same stores.
    resumed = run_cli(binary, "--resume", str(out), "--quiet", cwd=tmp_path / "exp")
    assert resumed.returncode == 0, resumed.stderr
    assert f"exported 4 trials of exported to MLflow at {uri}" in resumed.stdout
    expected = report_steps(packtune.load(out))
    assert sum(map(len, expected.values())) == 8
    assert mlflow_steps(uri, "exported") == expected
    # The trial that went on after the resume has a second event file; the reader joins them.
    [first] = steps
    assert len(list((tb / f"trial-{first}").glob("events.out.tfevents.*"))) == 2
    assert tensorboard_steps(tb) == expected
    assert list(parent_status(uri, "exported").values()) == ["FINISHED"]


def test_run_flags_override_the_config(binary: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, name="flagged", export={"mlflow": "unused"},
                          data={"train_size": 1000, "validation_size": 500})
    done = run_cli(binary, "--mlflow", str(config), "--out", "out", "--trials", "2", "--quiet",
                   "--tensorboard", "tb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # --mlflow alone: a local store in ./mlruns, of the folder the run started in.
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    expected = report_steps(packtune.load(tmp_path / "out"))
    assert mlflow_steps(uri, "flagged") == expected
    assert tensorboard_steps(tmp_path / "tb") == expected
    assert not (tmp_path / "unused").exists()


def test_a_bad_export_stops_the_run_before_it_starts(binary: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, export={"mlflow": 3})
    bad = run_cli(binary, str(config), "--out", "out", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr == ("packtune: error: export.mlflow: expected true, false, a tracking URI or a folder, "
                          "got an integer (3)\n")
    assert not (tmp_path / "out").exists()
    # A TensorBoard folder with another's event files: refused before --out is made.
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "events.out.tfevents.1.other").write_bytes(b"")
    config = write_config(tmp_path, export={"tensorboard": "tb"})
    refused = run_cli(binary, str(config), "--out", "out", cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"packtune: error: --tensorboard: {tmp_path / 'tb'} holds TensorBoard event files already; "
        "export into an empty folder"]
    assert not (tmp_path / "out").exists()
    # A URI MLflow knows no store for: refused by MLflow's own word.
    unknown = run_cli(binary, str(write_config(tmp_path / "plain")), "--out", "out", "--mlflow=foo:bar", cwd=tmp_path)
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("packtune: error: --mlflow foo:bar: ") and unknown.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()
    # MLflow missing from the exporter's Python: exit 1, one line that says what to do.
    fake = tmp_path / "no-mlflow" / "mlflow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'mlflow'\", name='mlflow')\n")
    config = write_config(tmp_path / "plain")
    missing = run_cli(binary, str(config), "--out", "out", "--mlflow", cwd=tmp_path,
                      PYTHONPATH=str(fake.parent))
    assert missing.returncode == 1
    lines = missing.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("packtune: error: --mlflow needs the Python package mlflow in ")
    assert "scripts/setup.sh" in lines[0]
    assert not (tmp_path / "out").exists()


def test_pbt_exploits_are_charted_and_tagged(binary: Path, tmp_path: Path) -> None:
    import mlflow
    import pytest
    from mlflow.tracking import MlflowClient
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    config = write_config(tmp_path, name="pbt", tuner={"name": "pbt", "population": 4, "interval": 0.5,
                                                       "perturb": ["lr"]},
                          budget={"unit": "epochs", "min": 0.5, "max": 1, "report_every": 0.5},
                          data={"train_size": 1000, "validation_size": 500})
    done = run_cli(binary, str(config), "--out", "out", "--quiet", "--mlflow", "--tensorboard", "tb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    reports = packtune.load(tmp_path / "out").reports()
    exploited = [report for report in reports if "exploit" in report]
    assert exploited, "a generation of pbt exploits at least one member"
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    frame = mlflow.search_runs(experiment_names=["pbt"])
    client = MlflowClient(uri)
    for report in exploited:
        own = [r for r in reports if r["trial"] == report["trial"]]
        row = frame[frame["tags.packtune.trial"] == str(report["trial"])].iloc[0]
        # The params are the config it started with; the exploit is a tag, its lr a metric.
        assert float(row["params.lr"]) == own[0]["config"]["lr"]
        assert json.loads(row["tags.packtune.exploit.1"]) == {"budget": report["budget"], **report["exploit"],
                                                              "config": report["config"]}
        history = {m.step: m.value for m in client.get_metric_history(row["run_id"], "config.lr")}
        assert history == {round(r["budget"] * 10): pytest.approx(r["config"]["lr"]) for r in own}
        events = EventAccumulator(str(tmp_path / "tb" / f"trial-{report['trial']}"))
        events.Reload()
        charted = {e.step: float(tensor_util.make_ndarray(e.tensor_proto)) for e in events.Tensors("config/lr")}
        assert charted == {round(r["budget"] * 10): pytest.approx(r["config"]["lr"], rel=1e-6) for r in own}
    children = frame[frame["tags.packtune.trial"].notna()]
    plain = children[~children["tags.packtune.trial"].isin([str(e["trial"]) for e in exploited])]
    assert len(plain) > 0 and plain["tags.packtune.exploit.1"].isna().all()
