"""A run in MLflow: a parent run for the experiment, one nested run per trial, written with
MLflow's own client (``MlflowClient``)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, TypeVar

from ..records import flatten, metric_names
from .steps import by_trial, numeric_metrics, start_time, step_of, step_scale

if TYPE_CHECKING:
    from ..experiment import Run

__all__ = ["export_mlflow", "default_uri"]

# MLflow's limits on one log_batch call.
_MAX_METRICS, _MAX_PARAMS = 1000, 100
T = TypeVar("T")


def default_uri(folder: Path = Path("mlruns")) -> str:
    """A local store in ``./mlruns``: an SQLite database, ``mlruns/mlflow.db``, beside the
    artifacts. MLflow 3 refuses its plain-file store unless told (it is in maintenance mode), so
    the local default is the database it recommends; ``mlflow ui --backend-store-uri`` opens it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(folder / 'mlflow.db').resolve()}"


def _chunks(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _param_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def export_mlflow(run: "Run", uri: Optional[str] = None) -> str:
    """Write ``run`` to the MLflow tracking store at ``uri`` and return the parent run's id.

    The experiment is named after the run's; its parent run (named after the results folder)
    gets the config as params, the best value and test metrics, the best trial's number as the
    tag ``packtune.best_trial``, and report.html, config.json and best.json as artifacts. Each
    trial is a run nested under it (``trial N``): its config as params, and every metric of
    every report at step ``budget × packtune.step_scale`` (a tag), the budget itself as the
    metric ``budget``. The best trial's run is tagged ``packtune.best`` and carries its test
    metrics. Exporting the same folder again replaces the earlier export (its runs are marked
    deleted). A run not finished when exported is marked KILLED.
    """
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    local = uri is None
    uri = uri or default_uri()
    client = MlflowClient(tracking_uri=uri)
    folder = str(run.dir.resolve())
    experiment = client.get_experiment_by_name(run.name)
    if experiment is not None:
        experiment_id = experiment.experiment_id
        if experiment.lifecycle_stage == "deleted":
            client.restore_experiment(experiment_id)
    elif local:
        # Beside the database, so that ./mlruns holds the whole store.
        artifacts = Path(uri[len("sqlite:///"):]).parent / "artifacts"
        experiment_id = client.create_experiment(run.name, artifact_location=artifacts.as_uri())
    else:
        experiment_id = client.create_experiment(run.name)
    for old in client.search_runs([experiment_id], filter_string=f"tags.`packtune.dir` = '{folder}'"):
        client.delete_run(old.info.run_id)

    reports = run.reports()
    metrics = metric_names(reports)
    trials = by_trial(reports)
    scale = step_scale([float(r["budget"]) for r in reports])
    best = run.best() or {}
    start = start_time(run)
    status = "FINISHED" if run.finished() else "KILLED"
    common = {"packtune.dir": folder, "packtune.step_scale": str(scale)}

    parent = client.create_run(experiment_id, run_name=run.dir.name, start_time=int(start * 1000),
                               tags={**common, "packtune.metric": run.metric, "packtune.mode": run.mode})
    parent_id = parent.info.run_id
    params = [Param(k, _param_value(v)[:6000]) for k, v in flatten(run.config).items()]
    tags = [RunTag("packtune.best_trial", str(best["trial"]))] if "trial" in best else []
    summary = []
    now = int(time.time() * 1000)
    if "value" in best:
        summary.append(Metric(f"best_{best.get('metric', run.metric)}", float(best["value"]), now, 0))
    for key, value in (best.get("test") or {}).items():
        if key.startswith("test_"):
            summary.append(Metric(key, float(value), now, 0))
    for chunk in _chunks(params, _MAX_PARAMS):
        client.log_batch(parent_id, params=list(chunk))
    client.log_batch(parent_id, metrics=summary, tags=tags)
    for name in ("report.html", "config.json", "best.json"):
        if (run.dir / name).is_file():
            client.log_artifact(parent_id, str(run.dir / name))

    for trial, book in trials.items():
        is_best = best.get("trial") == trial
        child = client.create_run(
            experiment_id, run_name=f"trial {trial}", start_time=int((start + _job_start(book.reports)) * 1000),
            tags={**common, "mlflow.parentRunId": parent_id, "packtune.trial": str(trial),
                  **({"packtune.best": "true"} if is_best else {})})
        child_id = child.info.run_id
        trial_params = [Param(k, _param_value(v)[:6000]) for k, v in flatten(book.config).items()]
        for chunk in _chunks(trial_params, _MAX_PARAMS):
            client.log_batch(child_id, params=list(chunk))
        points: List[Metric] = []
        for report in book.reports:
            step = step_of(float(report["budget"]), scale)
            stamp = int((start + float(report.get("wall_time", 0))) * 1000)
            points.append(Metric("budget", float(report["budget"]), stamp, step))
            for name, value in numeric_metrics(report, metrics).items():
                points.append(Metric(name, value, stamp, step))
        if is_best:
            points += [Metric(m.key, m.value, m.timestamp, 0) for m in summary if m.key.startswith("test_")]
        for chunk in _chunks(points, _MAX_METRICS):
            client.log_batch(child_id, metrics=list(chunk))
        end = max(float(r.get("wall_time", 0)) for r in book.reports)
        client.set_terminated(child_id, status=status, end_time=int((start + end) * 1000))
    last = max((float(r.get("wall_time", 0)) for r in reports), default=0.0)
    client.set_terminated(parent_id, status=status, end_time=int((start + last) * 1000))
    return str(parent_id)


def _job_start(reports: List[Dict[str, Any]]) -> float:
    starts = [float(r["job_start"]) for r in reports if isinstance(r.get("job_start"), (int, float))]
    return min(starts) if starts else 0.0
