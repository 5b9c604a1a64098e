"""A run in MLflow: a parent run for the experiment, one nested run per trial, written with
MLflow's own client (``MlflowClient``). Written as a sync: what the store has already is not
written again, so the same folder can be exported while it runs, after a ``--resume``, or
twice, and each report is one step, once."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple, TypeVar

from ..records import flatten, metric_names
from .steps import (by_trial, config_budgets, exploits, numeric_metrics, perturbed_keys, schedule, start_time, step_of,
                    step_scale)

if TYPE_CHECKING:
    from ..experiment import RunFolder

__all__ = ["export_mlflow", "default_uri", "store_uri", "MlflowSync"]

# MLflow's limits on one log_batch call.
_MAX_METRICS, _MAX_PARAMS = 1000, 100
# MLflow's longest tag value.
_MAX_TAG = 8000
# RFC 3986's scheme and its colon; two characters at least, so that no drive letter is one.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")
T = TypeVar("T")
# A report as MLflow gets it: its step, its metrics and its tags (mlflow.entities').
ReportPoints = Tuple[int, List[Any], List[Any]]


def default_uri(folder: Path = Path("mlruns")) -> str:
    """A local store in ``./mlruns``: an SQLite database, ``mlruns/mlflow.db``, beside the
    artifacts. MLflow 3 refuses its plain-file store unless told (it is in maintenance mode), so
    the local default is the database it recommends; ``mlflow ui --backend-store-uri`` opens it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(folder / 'mlflow.db').resolve()}"


def store_uri(where: Optional[str] = None) -> Tuple[str, Optional[Path]]:
    """The tracking URI ``where`` names, and the folder for the artifacts of a local store.

    A URI (a scheme and a colon: ``http://host:5000``, ``sqlite:///FILE``, ``databricks``) goes
    to MLflow as it is, its artifacts where that store puts them; anything else is a folder for
    a local store as :func:`default_uri` makes one, its artifacts in ``FOLDER/artifacts``.
    None: the local store in ``./mlruns``.
    """
    if where and _URI.match(where):
        return where, None
    folder = Path(where) if where else Path("mlruns")
    return default_uri(folder), (folder / "artifacts").resolve()


def _chunks(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _by_size(batches: Sequence[ReportPoints]) -> Iterable[List[ReportPoints]]:
    # Whole reports, up to log_batch's most metrics (a report has far fewer).
    group: List[ReportPoints] = []
    size = 0
    for batch in batches:
        count = len(batch[1])
        if group and size + count > _MAX_METRICS:
            yield group
            group, size = [], 0
        group.append(batch)
        size += count
    if group:
        yield group


def _param_value(value: Any) -> str:
    return (value if isinstance(value, str) else json.dumps(value))[:6000]


class MlflowSync:
    """Brings an MLflow store up to date with a results folder.

    The experiment is named after the run's; its parent run (named after the results folder,
    tagged ``packtune.dir`` with its path) gets the config as params and, once the experiment
    finished, the best value and test metrics, the best trial's number as the tag
    ``packtune.best_trial``, and report.html, config.json and best.json as artifacts. Each trial
    is a run nested under it (``trial N``): its config as params, and every metric of every
    report at step ``budget × packtune.step_scale`` (a tag of the parent, fixed when it is
    made), the budget itself as the metric ``budget``. A report whose step the trial's run has
    already is not logged again.
    """

    def __init__(self, run: "RunFolder", uri: Optional[str] = None) -> None:
        from mlflow.tracking import MlflowClient

        self.run = run
        self.perturbed = perturbed_keys(run.config)
        self.uri, artifacts = store_uri(uri)
        self.client = MlflowClient(tracking_uri=self.uri)
        self.folder = str(run.dir.resolve())
        self.start = start_time(run)
        experiment = self.client.get_experiment_by_name(run.name)
        if experiment is not None:
            self.experiment_id = experiment.experiment_id
            if experiment.lifecycle_stage == "deleted":
                self.client.restore_experiment(self.experiment_id)
        elif artifacts is not None:
            # Beside the database, so that the folder holds the whole store.
            self.experiment_id = self.client.create_experiment(run.name, artifact_location=artifacts.as_uri())
        else:
            self.experiment_id = self.client.create_experiment(run.name)
        mine = self.client.search_runs([self.experiment_id], filter_string=f"tags.`packtune.dir` = '{self.folder}'")
        parents = [r for r in mine if "mlflow.parentRunId" not in r.data.tags]
        if parents:
            parent = parents[0]
            self.scale = int(parent.data.tags["packtune.step_scale"])
        else:
            self.scale = step_scale(config_budgets(run.config) + [float(r["budget"]) for r in run.reports()])
            parent = self._create_parent()
        self.parent_id: str = parent.info.run_id
        self.children: Dict[int, str] = {}
        self.steps: Dict[int, Set[int]] = {}
        for child in mine:
            if child.data.tags.get("mlflow.parentRunId") == self.parent_id and "packtune.trial" in child.data.tags:
                trial = int(child.data.tags["packtune.trial"])
                self.children[trial] = child.info.run_id
                self.steps[trial] = {m.step for m in self.client.get_metric_history(child.info.run_id, "budget")}

    def _create_parent(self) -> Any:
        from mlflow.entities import Param

        tags = {"packtune.dir": self.folder, "packtune.step_scale": str(self.scale),
                "packtune.metric": self.run.metric, "packtune.mode": self.run.mode}
        parent = self.client.create_run(self.experiment_id, run_name=self.run.dir.name,
                                        start_time=int(self.start * 1000), tags=tags)
        params = [Param(k, _param_value(v)) for k, v in flatten(self.run.config).items()]
        for chunk in _chunks(params, _MAX_PARAMS):
            self.client.log_batch(parent.info.run_id, params=list(chunk))
        return parent

    def _child(self, trial: int, reports: List[Dict[str, Any]]) -> str:
        from mlflow.entities import Param

        if trial in self.children:
            return self.children[trial]
        starts = [float(r["job_start"]) for r in reports if isinstance(r.get("job_start"), (int, float))]
        child = self.client.create_run(
            self.experiment_id, run_name=f"trial {trial}", start_time=int((self.start + min(starts, default=0.0)) * 1000),
            tags={"packtune.dir": self.folder, "mlflow.parentRunId": self.parent_id, "packtune.trial": str(trial)})
        # The config the trial started with: params cannot change (under pbt an exploit does).
        params = [Param(k, _param_value(v)) for k, v in flatten(reports[0].get("config", {})).items()]
        for chunk in _chunks(params, _MAX_PARAMS):
            self.client.log_batch(child.info.run_id, params=list(chunk))
        self.children[trial] = child.info.run_id
        self.steps[trial] = set()
        return str(child.info.run_id)

    def sync(self) -> int:
        """Logs the reports the store lacks; returns how many.

        Under pbt a trial's params stay the config it started with (MLflow's params cannot
        change); the perturbed hyper-parameters it trained with are metrics ``config.KEY`` at
        each step, and each exploit is a tag ``packtune.exploit.N`` (the trial's Nth): JSON of
        the budget, the donor (``from_trial``, ``from_budget``) and the config from there on.
        """
        from mlflow.entities import Metric, RunTag

        reports = self.run.reports()
        metrics = metric_names(reports)
        logged = 0
        for trial, book in by_trial(reports).items():
            # Each report's points and tag, whole: a batch that fails leaves its steps to the
            # next sync, and one that was logged is never logged again.
            batches: List[ReportPoints] = []
            generations = exploits(book.reports)
            for index, report in enumerate(book.reports):
                step = step_of(float(report["budget"]), self.scale)
                if step in self.steps.get(trial, set()) or any(step == done for done, _, _ in batches):
                    continue
                stamp = int((self.start + float(report.get("wall_time", 0))) * 1000)
                points = [Metric("budget", float(report["budget"]), stamp, step)]
                points += [Metric(name, value, stamp, step) for name, value in numeric_metrics(report, metrics).items()]
                points += [Metric(f"config.{key}", value, stamp, step)
                           for key, value in schedule(report, self.perturbed).items()]
                tags = []
                if index in generations:
                    lineage = {"budget": report["budget"], **report["exploit"], "config": report.get("config", {})}
                    tags.append(RunTag(f"packtune.exploit.{generations[index]}", json.dumps(lineage)[:_MAX_TAG]))
                batches.append((step, points, tags))
            if not batches:
                continue
            child = self._child(trial, book.reports)
            for group in _by_size(batches):
                self.client.log_batch(child, metrics=[m for _, points, _ in group for m in points],
                                      tags=[t for _, _, tags in group for t in tags])
                self.steps[trial] |= {step for step, _, _ in group}
                logged += len(group)
        return logged

    def finish(self) -> None:
        """The experiment's end (or where it stopped): the best trial and its test metrics,
        the artifacts, and every run ended, FINISHED when the experiment finished, else KILLED
        (a later sync after ``--resume`` goes on in the same runs)."""
        from mlflow.entities import Metric, RunTag

        best = self.run.best() or {}
        now = int(time.time() * 1000)
        summary: List[Metric] = []
        if "value" in best:
            summary.append(Metric(f"best_{best.get('metric', self.run.metric)}", float(best["value"]), now, 0))
        tests = [Metric(k, float(v), now, 0) for k, v in (best.get("test") or {}).items() if k.startswith("test_")]
        tags = [RunTag("packtune.best_trial", str(best["trial"]))] if "trial" in best else []
        self.client.log_batch(self.parent_id, metrics=summary + tests, tags=tags)
        for trial, child in self.children.items():
            if trial == best.get("trial"):
                self.client.log_batch(child, metrics=tests, tags=[RunTag("packtune.best", "true")])
            elif self._tagged_best(child):
                self.client.delete_tag(child, "packtune.best")
        for name in ("report.html", "config.json", "best.json"):
            if (self.run.dir / name).is_file():
                self.client.log_artifact(self.parent_id, str(self.run.dir / name))
        status = "FINISHED" if self.run.finished() else "KILLED"
        reports = self.run.reports()
        ends: Dict[int, float] = {}
        for report in reports:
            trial = int(report["trial"])
            ends[trial] = max(ends.get(trial, 0.0), float(report.get("wall_time", 0)))
        for trial, child in self.children.items():
            self.client.set_terminated(child, status=status, end_time=int((self.start + ends.get(trial, 0.0)) * 1000))
        last = max(ends.values(), default=0.0)
        self.client.set_terminated(self.parent_id, status=status, end_time=int((self.start + last) * 1000))

    def _tagged_best(self, child: str) -> bool:
        # A trial that was best when an earlier, partial export finished may not be now.
        return bool(self.client.get_run(child).data.tags.get("packtune.best") == "true")


def export_mlflow(run: "RunFolder", uri: Optional[str] = None) -> str:
    """Write ``run`` to the MLflow tracking store ``uri`` (:func:`store_uri`; default: a local
    store in ``./mlruns``) as :class:`MlflowSync` describes, and return the parent run's id. What the
    store has from an earlier export of the same folder is kept and only the rest is added."""
    sync = MlflowSync(run, uri)
    sync.sync()
    sync.finish()
    return sync.parent_id
