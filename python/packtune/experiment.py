"""A results folder read back: its config, reports, trials, best trial and journal. What runs,
resumes and exports it (packtune.Run) builds on this in launch.py; the trackers read a run
through it alone, so that no module here imports one that imports it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from .binary import PathLike
from .records import REPORT_FIELDS, flatten, metric_names, read_jsonl

if TYPE_CHECKING:  # pandas is imported when a DataFrame is asked for, not on `import packtune`
    import pandas

__all__ = ["RunFolder", "results_folder"]


class RunFolder:
    """The results folder of one ``packtune run`` (its ``--out``), finished or not.

    Each method reads the folder as it is now, so a Run of an experiment still running shows
    the reports written so far.
    """

    def __init__(self, directory: PathLike) -> None:
        self.dir = Path(directory)

    def __repr__(self) -> str:
        return f"packtune.{type(self).__name__}({str(self.dir)!r})"

    @property
    def config(self) -> Dict[str, Any]:
        """The config as run (``config.json``): overrides applied, defaults filled in."""
        config: Dict[str, Any] = json.loads((self.dir / "config.json").read_text(encoding="utf-8"))
        return config

    @property
    def name(self) -> str:
        """The experiment's name."""
        return str(self.config.get("name", self.dir.name))

    @property
    def metric(self) -> str:
        """The metric the tuner optimises (``val_accuracy`` unless the config names another)."""
        return str(self.config.get("metric", "val_accuracy"))

    @property
    def mode(self) -> str:
        """``max`` or ``min``: how the metric is optimised."""
        mode = self.config.get("mode")
        if mode:
            return str(mode)
        return "max" if self.metric == "val_accuracy" else "min"

    @property
    def report_html(self) -> Path:
        """``report.html``, the experiment in charts: rewritten every few seconds while the
        experiment runs, so not there yet in its first seconds (``packtune report DIR`` writes it
        at any time)."""
        return self.dir / "report.html"

    def reports(self) -> List[Dict[str, Any]]:
        """``results.jsonl`` as a list of dicts, one per report, in the order they arrived (none
        before the first report)."""
        path = self.dir / "results.jsonl"
        return read_jsonl(path) if path.exists() else []

    def results(self) -> "pandas.DataFrame":
        """One row per report: the report's fields, its metrics, then its config flattened into
        ``config.NAME`` columns (``config.opt.name`` for nested values), as ``packtune export
        --csv`` writes them."""
        import pandas

        reports = self.reports()
        rows = [flatten(report) for report in reports]
        fields = [f for f in REPORT_FIELDS if any(f in row for row in rows)]
        metrics = metric_names(reports)
        rest: Dict[str, None] = {}
        for row in rows:
            for key in row:
                if key not in fields and key not in metrics:
                    rest[key] = None
        exploit = [c for c in rest if c.startswith("exploit.")]
        config = sorted(c for c in rest if c.startswith("config."))
        others = [c for c in rest if c not in exploit and c not in config]
        return pandas.DataFrame(rows, columns=fields + exploit + others + metrics + config)

    def trials(self) -> "pandas.DataFrame":
        """One row per trial, in trial order: its last report's budget and metrics (the highest
        budget it reached), how many reports it made, whether it is the best trial, and its
        config flattened into ``config.NAME`` columns."""
        import pandas

        reports = self.reports()
        metrics = metric_names(reports)
        last: Dict[int, Dict[str, Any]] = {}
        count: Dict[int, int] = {}
        for report in reports:
            trial = int(report["trial"])
            count[trial] = count.get(trial, 0) + 1
            if trial not in last or report["budget"] >= last[trial]["budget"]:
                last[trial] = report
        best = self.best()
        best_trial = best["trial"] if best else None
        rows = []
        for trial in sorted(last):
            report = last[trial]
            row: Dict[str, Any] = {"trial": trial, "budget": report["budget"], "reports": count[trial],
                                   "best": trial == best_trial}
            row.update({m: report.get(m) for m in metrics})
            row.update(flatten(report.get("config", {}), "config."))
            rows.append(row)
        head = ["trial", "budget", "reports", "best"] + metrics
        config = sorted({key for row in rows for key in row if key.startswith("config.")})
        return pandas.DataFrame(rows, columns=head + config)

    def best(self) -> Optional[Dict[str, Any]]:
        """``best.json``: the best trial's ``trial``, ``config``, ``metric``, ``value``,
        ``budget`` and, once its final model was tested, ``test``. The driver writes it when the
        experiment ends or is stopped (Ctrl-C, SIGTERM): None before then, and for a run killed
        with ``kill -9`` until ``resume()`` finishes it. ``reports()`` has every report so far."""
        path = self.dir / "best.json"
        if not path.exists():
            return None
        value: Dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return value

    def journal(self) -> List[Dict[str, Any]]:
        """``journal.jsonl``, what ``--resume`` replays: a header, then one entry per event (a
        job started, a report, a result, a checkpoint, the end), each a dict. Each line's place
        and checksum (``_seq``, ``_crc``), which ``--resume`` checks, are left out."""
        entries = read_jsonl(self.dir / "journal.jsonl")
        for entry in entries:
            entry.pop("_seq", None)
            entry.pop("_crc", None)
        return entries

    def finished(self) -> bool:
        """Whether the experiment ran to its end (the journal's last entry says so)."""
        path = self.dir / "journal.jsonl"
        return path.exists() and any("finished" in entry for entry in self.journal()[-1:])


def results_folder(directory: PathLike) -> Path:
    """``directory`` as a Path, once it is known to hold a run's results.

    Raises:
        FileNotFoundError: ``directory`` holds no ``config.json``.
    """
    path = Path(directory)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path / 'config.json'}: no such file; is {path} the --out of a packtune run?")
    return path
