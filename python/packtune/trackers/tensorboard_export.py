"""A run in TensorBoard: one event file per trial, written with TensorBoard's own event writer
and summary protos (scalars, and hyper-parameters for the HParams plugin)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Union

from ..records import flatten, metric_names
from .steps import by_trial, numeric_metrics, start_time, step_of, step_scale

if TYPE_CHECKING:
    from ..experiment import Run

__all__ = ["export_tensorboard", "trial_folder"]

HParamValue = Union[bool, float, int, str]


def trial_folder(trial: int) -> str:
    """The folder (a TensorBoard run) that holds a trial's event file."""
    return f"trial-{trial}"


def _hparam(value: Any) -> HParamValue:
    # The HParams plugin takes booleans, numbers and strings; a list or null becomes its JSON.
    if isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value)


def export_tensorboard(run: "Run", out: Path) -> Path:
    """Write ``run`` as TensorBoard event files under ``out`` and return ``out``.

    ``out/trial-N`` holds trial N's file: its config as the HParams plugin's session (at step
    0), and each metric of each report as a scalar at step ``budget × scale``, where ``scale``
    is the smallest power of ten that makes every budget whole (the scalar ``budget`` gives the
    budget itself). ``out`` itself holds the experiment's HParams configuration: every
    hyper-parameter and the metrics. ``tensorboard --logdir OUT`` shows them.

    Raises:
        FileExistsError: ``out`` holds event files already (TensorBoard would show both).
    """
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.plugins.hparams import summary_v2 as hp
    from tensorboard.plugins.scalar.summary_v2 import scalar_pb
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    if out.exists() and any(out.rglob("events.out.tfevents.*")):
        raise FileExistsError(f"{out} holds TensorBoard event files already; export into an empty folder")
    reports = run.reports()
    metrics = metric_names(reports)
    scale = step_scale([float(r["budget"]) for r in reports])
    start = start_time(run)
    values: Dict[str, List[HParamValue]] = {}
    for trial, book in by_trial(reports).items():
        hparams = {k: _hparam(v) for k, v in flatten(book.config).items()}
        for key, value in hparams.items():
            values.setdefault(key, []).append(value)
        writer = EventFileWriter(str(out / trial_folder(trial)))
        first = min((float(r.get("job_start", 0) or 0) for r in book.reports), default=0.0)
        session = hp.hparams_pb(hparams, trial_id=trial_folder(trial), start_time_secs=start + first)
        writer.add_event(Event(wall_time=start + first, step=0, summary=session))
        for report in book.reports:
            step = step_of(float(report["budget"]), scale)
            stamp = start + float(report.get("wall_time", 0))
            writer.add_event(Event(wall_time=stamp, step=step, summary=scalar_pb("budget", float(report["budget"]))))
            for name, value in numeric_metrics(report, metrics).items():
                writer.add_event(Event(wall_time=stamp, step=step, summary=scalar_pb(name, value)))
        writer.close()
    domains = []
    for key, seen in values.items():
        kinds = {type(v) for v in seen}
        # A discrete domain where the values are few or not numbers, so the plugin offers them
        # as choices; sampled numbers keep no domain (the plugin shows their range).
        discrete = kinds <= {str} or kinds <= {bool} or len(set(seen)) <= 10
        domains.append(hp.HParam(key, hp.Discrete(sorted(set(seen), key=str)) if discrete and len(kinds) == 1 else None))
    experiment = hp.hparams_config_pb(
        hparams=domains, metrics=[hp.Metric(name) for name in metrics], time_created_secs=start)
    writer = EventFileWriter(str(out))
    writer.add_event(Event(wall_time=start, step=0, summary=experiment))
    writer.close()
    return out
