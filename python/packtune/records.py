"""Reading a results folder's JSON lines, and flattening configs into columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping

__all__ = ["read_jsonl", "flatten", "REPORT_FIELDS", "metric_names"]

# The fields of a report that are not metrics (src/cli/export_command.cpp keeps the same list,
# so that the CSV export and these DataFrames agree on which columns are metrics).
REPORT_FIELDS = ("trial", "budget", "final", "wall_time", "train_seconds", "actor", "unit_size", "unit", "job_start")


def read_jsonl(path: Path) -> List[Dict[str, Any]]:
    """Every JSON object of a ``.jsonl`` file, in order.

    A last line without its newline that does not parse is a write the driver has not finished
    (or that a crash tore): left out, as ``packtune report`` and ``--resume`` leave it out.

    Raises:
        ValueError: a line before the last is not JSON.
    """
    return list(_lines(path))


def _lines(path: Path) -> Iterator[Dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines):
                return
            raise ValueError(f"{path}: line {number} is not JSON ({e.msg})") from None
        if isinstance(value, dict):
            yield value


def flatten(value: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """``{"opt": {"name": "adam"}}`` as ``{"opt.name": "adam"}``; lists stay values."""
    cells: Dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping) and item:
            cells.update(flatten(item, name + "."))
        else:
            cells[name] = item
    return cells


def metric_names(reports: List[Dict[str, Any]]) -> List[str]:
    """The metrics of the reports, in the order they first appear: every top-level number (or
    null: a failed metric) that is not one of the report's fields."""
    names: Dict[str, None] = {}
    for report in reports:
        for key, value in report.items():
            if key in REPORT_FIELDS or key in names:
                continue
            if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
                names[key] = None
    return list(names)
