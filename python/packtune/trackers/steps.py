"""What the trackers share: budgets as integer steps, the trials' reports, the start time."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Dict, List, Sequence

from ..records import metric_names

if TYPE_CHECKING:
    from ..experiment import RunFolder

__all__ = ["step_scale", "config_budgets", "TrialReports", "by_trial", "start_time"]


def step_scale(budgets: Sequence[float]) -> int:
    """The smallest power of ten that makes every budget a whole number (at most 10^6).

    MLflow's and TensorBoard's steps are integers and packtune's budgets are not (0.5 epochs):
    a step is the budget times this scale, so steps keep the budgets' proportions on a chart.
    """
    for exponent in range(7):
        scale = int(10**exponent)
        if all(abs(b * scale - round(b * scale)) < 1e-6 * max(1.0, abs(b) * scale) for b in budgets):
            return scale
    return 10**6


def config_budgets(config: Dict[str, Any]) -> List[float]:
    """The budgets a config names (``budget.min``, ``max`` and ``report_every``): a live export
    fixes its scale before every budget has been reported, and these are most of them."""
    budget = config.get("budget", {})
    values = [budget.get(key) for key in ("min", "max", "report_every")] if isinstance(budget, dict) else []
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0]


def step_of(budget: float, scale: int) -> int:
    """The integer step of ``budget`` under ``scale``."""
    return int(round(budget * scale))


class TrialReports:
    """One trial's reports in arrival order, and the config it started with."""

    def __init__(self, trial: int) -> None:
        self.trial = trial
        self.reports: List[Dict[str, Any]] = []

    @property
    def config(self) -> Dict[str, Any]:
        """The config of its first report (under pbt a later exploit may change it)."""
        config: Dict[str, Any] = self.reports[0].get("config", {}) if self.reports else {}
        return config


def by_trial(reports: List[Dict[str, Any]]) -> Dict[int, TrialReports]:
    """The reports grouped by trial, trials in order."""
    trials: Dict[int, TrialReports] = {}
    for report in reports:
        trial = int(report["trial"])
        trials.setdefault(trial, TrialReports(trial)).reports.append(report)
    return dict(sorted(trials.items()))


def numeric_metrics(report: Dict[str, Any], names: Sequence[str]) -> Dict[str, float]:
    """The report's metrics that have a finite value (a failed metric is null)."""
    values = {}
    for name in names:
        value = report.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            values[name] = float(value)
    return values


def perturbed_keys(config: Dict[str, Any]) -> List[str]:
    """The hyper-parameters a trial's config may change while it trains: those ``pbt``
    perturbs (``tuner.perturb``); none under any other tuner."""
    tuner = config.get("tuner", {})
    if not isinstance(tuner, dict) or tuner.get("name") != "pbt":
        return []
    return [str(key) for key in tuner.get("perturb", [])]


def schedule(report: Dict[str, Any], keys: Sequence[str]) -> Dict[str, float]:
    """The numbers among ``keys`` of the config a report was trained with, by key: under pbt an
    exploit changes them, so the trackers chart them as metrics, step by step (a choice
    of words has no chart; the exploit's tag holds it)."""
    config = report.get("config", {})
    return {key: float(config[key]) for key in keys
            if isinstance(config.get(key), (int, float)) and not isinstance(config.get(key), bool)
            and math.isfinite(config[key])}


def exploits(reports: Sequence[Dict[str, Any]]) -> Dict[int, int]:
    """A trial's reports that start an exploit, by index in ``reports``: their generation, 1 for
    the trial's first exploit."""
    marks: Dict[int, int] = {}
    for index, report in enumerate(reports):
        if isinstance(report.get("exploit"), dict):
            marks[index] = len(marks) + 1
    return marks


def start_time(run: "RunFolder") -> float:
    """When the experiment started, in seconds since the epoch: the driver writes config.json
    then, and a report's wall_time counts from there."""
    return (run.dir / "config.json").stat().st_mtime


__all__ += ["step_of", "numeric_metrics", "metric_names", "perturbed_keys", "schedule", "exploits"]
