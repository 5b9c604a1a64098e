"""A run in TensorBoard: one event file per trial, written with TensorBoard's own event writer
and summary protos (scalars, and hyper-parameters for the HParams plugin). Written as a sync,
as the MLflow export: steps already in OUT are not written again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Union

from ..records import flatten, metric_names
from .steps import by_trial, config_budgets, numeric_metrics, perturbed_keys, schedule, start_time, step_of, step_scale

if TYPE_CHECKING:
    from ..experiment import RunFolder

__all__ = ["export_tensorboard", "trial_folder", "recorded_scale", "TensorboardSync"]

HParamValue = Union[bool, float, int, str]
# OUT's record of what it holds: the results folder and the step scale, fixed by the first sync.
MARK = "packtune_export.json"


def trial_folder(trial: int) -> str:
    """The folder (a TensorBoard run) that holds a trial's event file."""
    return f"trial-{trial}"


def _hparam(value: Any) -> HParamValue:
    # The HParams plugin takes booleans, numbers and strings; a list or null becomes its JSON.
    if isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value)


def _events(folder: Path) -> List[Path]:
    return sorted(folder.glob("events.out.tfevents.*")) if folder.is_dir() else []


def recorded_scale(out: Path, folder: str) -> Optional[int]:
    """The step scale an earlier export of the results folder ``folder`` (absolute) fixed in
    ``out``, or None where ``out`` holds no export yet.

    Raises:
        FileExistsError: ``out`` is a file, or holds another export or other event files.
    """
    mark = out / MARK
    if mark.is_file():
        record = json.loads(mark.read_text(encoding="utf-8"))
        if record.get("dir") != folder:
            raise FileExistsError(f"{out} holds the TensorBoard export of {record.get('dir')}; "
                                  "export into an empty folder")
        return int(record["step_scale"])
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} is a file; export into a folder")
    if out.exists() and any(out.rglob("events.out.tfevents.*")):
        raise FileExistsError(f"{out} holds TensorBoard event files already; export into an empty folder")
    return None


class TensorboardSync:
    """Brings the event files under ``out`` up to date with a results folder.

    ``out/trial-N`` holds trial N's events: its config as the HParams plugin's session (at step
    0, once), and each metric of each report as a scalar at step ``budget × scale`` (the scalar
    ``budget`` gives the budget itself), ``scale`` being the smallest power of ten that makes
    the config's and the reports' budgets whole, kept in ``out/packtune_export.json``. Under
    pbt the session is the config a trial started with, and the perturbed hyper-parameters it
    trained with are scalars ``config/KEY`` at each step. A sync
    after a ``--resume`` adds a second event file to the trials that went on; TensorBoard reads
    both as one run. ``out`` itself holds the experiment's HParams configuration, written anew by
    :meth:`close`.

    Raises:
        FileExistsError: ``out`` holds event files of something else.
    """

    def __init__(self, run: "RunFolder", out: Path) -> None:
        self.run = run
        self.out = out
        self.folder = str(run.dir.resolve())
        self.start = start_time(run)
        scale = recorded_scale(out, self.folder)
        if scale is not None:
            self.scale = scale
        else:
            self.scale = step_scale(config_budgets(run.config) + [float(r["budget"]) for r in run.reports()])
            out.mkdir(parents=True, exist_ok=True)
            (out / MARK).write_text(json.dumps({"dir": self.folder, "step_scale": self.scale}) + "\n",
                                    encoding="utf-8")
        self.steps: Dict[int, Set[int]] = {}
        for folder in out.glob("trial-*"):
            if _events(folder) and folder.name[len("trial-"):].isdigit():
                self.steps[int(folder.name[len("trial-"):])] = self._steps_in(folder)
        self.writers: Dict[int, Any] = {}

    @staticmethod
    def _steps_in(folder: Path) -> Set[int]:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        events = EventAccumulator(str(folder))
        events.Reload()
        return {e.step for e in events.Tensors("budget")} if "budget" in events.Tags()["tensors"] else set()

    def _writer(self, trial: int, reports: List[Dict[str, Any]]) -> Any:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.plugins.hparams import summary_v2 as hp
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        if trial in self.writers:
            return self.writers[trial]
        writer = EventFileWriter(str(self.out / trial_folder(trial)))
        if trial not in self.steps:
            first = min((float(r.get("job_start", 0) or 0) for r in reports), default=0.0)
            hparams = {k: _hparam(v) for k, v in flatten(reports[0].get("config", {})).items()}
            session = hp.hparams_pb(hparams, trial_id=trial_folder(trial), start_time_secs=self.start + first)
            writer.add_event(Event(wall_time=self.start + first, step=0, summary=session))
            self.steps[trial] = set()
        self.writers[trial] = writer
        return writer

    def sync(self) -> int:
        """Writes the reports ``out`` lacks; returns how many."""
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.plugins.scalar.summary_v2 import scalar_pb

        reports = self.run.reports()
        metrics = metric_names(reports)
        perturbed = perturbed_keys(self.run.config)
        written = 0
        for trial, book in by_trial(reports).items():
            for report in book.reports:
                step = step_of(float(report["budget"]), self.scale)
                if step in self.steps.get(trial, set()):
                    continue
                writer = self._writer(trial, book.reports)
                stamp = self.start + float(report.get("wall_time", 0))
                writer.add_event(Event(wall_time=stamp, step=step, summary=scalar_pb("budget", float(report["budget"]))))
                for name, value in numeric_metrics(report, metrics).items():
                    writer.add_event(Event(wall_time=stamp, step=step, summary=scalar_pb(name, value)))
                # Under pbt the HParams session holds the config a trial started with; what an
                # exploit changed is charted here.
                for key, value in schedule(report, perturbed).items():
                    writer.add_event(Event(wall_time=stamp, step=step, summary=scalar_pb(f"config/{key}", value)))
                self.steps[trial].add(step)
                written += 1
        for writer in self.writers.values():
            writer.flush()
        return written

    def close(self) -> None:
        """Closes the trials' files and writes the experiment's HParams configuration: every
        hyper-parameter of the trials so far, and the metrics."""
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.plugins.hparams import summary_v2 as hp
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        for writer in self.writers.values():
            writer.close()
        self.writers.clear()
        reports = self.run.reports()
        values: Dict[str, List[HParamValue]] = {}
        for book in by_trial(reports).values():
            for key, value in flatten(book.config).items():
                values.setdefault(key, []).append(_hparam(value))
        domains = []
        for key, seen in values.items():
            kinds = {type(v) for v in seen}
            # A discrete domain where the values are of one type and few (or not numbers), so
            # the plugin offers them as choices; sampled numbers keep no domain (it shows their
            # range).
            discrete = len(kinds) == 1 and (kinds <= {str} or kinds <= {bool} or len(set(seen)) <= 10)
            domains.append(hp.HParam(key, hp.Discrete(sorted(set(seen), key=str)) if discrete else None))
        experiment = hp.hparams_config_pb(
            hparams=domains, metrics=[hp.Metric(name) for name in metric_names(reports)], time_created_secs=self.start)
        # Only the latest configuration: an earlier sync's knew fewer trials.
        for old in _events(self.out):
            old.unlink()
        writer = EventFileWriter(str(self.out))
        writer.add_event(Event(wall_time=self.start, step=0, summary=experiment))
        writer.close()


def export_tensorboard(run: "RunFolder", out: Path) -> Path:
    """Write ``run`` as TensorBoard event files under ``out`` (see :class:`TensorboardSync`) and
    return ``out``. Into a folder an earlier export of the same run wrote, only what it lacks
    is added; a folder with other event files is refused."""
    sync = TensorboardSync(run, out)
    sync.sync()
    sync.close()
    return out
