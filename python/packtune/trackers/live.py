"""``python -m packtune.trackers live DIR [--mlflow STORE] [--tensorboard OUT]``: the exporter
that ``packtune run`` starts when it exports as it runs (the config's ``export``, or ``--mlflow``
and ``--tensorboard``). It answers the run one line at a time, on stdin and stdout:

- ``start``: whether it can write to the stores, before anything trains: ``ready``; ``refused
  MESSAGE`` where the config names a store it must not write to (the run exits with 2); or
  ``failed MESSAGE`` where it cannot export (a library missing, a store that does not answer;
  the run exits with 1). Then it follows DIR until:
- ``finish``: the last reports, the end of the trackers' runs (FINISHED where the journal says
  the experiment finished, else KILLED), and ``done SUMMARY`` or ``failed MESSAGE``.

Its input ending without ``finish`` (the run's process gone) ends the stores as ``finish``
would, without a word."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from pathlib import Path
from typing import IO, Iterator, Optional

from .follow import Follower

__all__ = ["serve"]

SETUP = ("run scripts/setup.sh, which installs it in ~/.cache/packtune/python-venv, "
         "or set PACKTUNE_PYTHON to a python that has it")
# The check of an MLflow server: a store that does not answer must stop the run in seconds,
# not after MLflow's minutes of retries (a user's own settings win).
_CHECK_ENV = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}


class Refused(Exception):
    """A store the config names that the export must not write to: exit 2 for the run."""


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def _check_mlflow(store: str) -> None:
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    from .mlflow_export import store_uri

    for name in ("mlflow", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)
    saved = {key: os.environ.get(key) for key in _CHECK_ENV}
    os.environ.update({key: value for key, value in _CHECK_ENV.items() if saved[key] is None})
    try:
        MlflowClient(tracking_uri=store_uri(store)[0]).search_experiments(max_results=1)
    except MlflowException as e:
        if e.error_code == "INVALID_PARAMETER_VALUE":
            raise Refused(f"--mlflow {store}: {_first_line(e)}") from e
        raise
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)


def _check_tensorboard(out: Path, directory: Path) -> None:
    from .tensorboard_export import recorded_scale

    importlib.import_module("tensorboard.summary.writer.event_file_writer")  # the writer the sync needs

    try:
        recorded_scale(out, str(directory.resolve()))
    except FileExistsError as e:
        raise Refused(f"--tensorboard: {e}") from e


def _check(directory: Path, mlflow: Optional[str], tensorboard: Optional[Path]) -> str:
    """``ready``, or why the export cannot go on."""
    option = "--mlflow"
    try:
        if mlflow:
            _check_mlflow(mlflow)
        option = "--tensorboard"
        if tensorboard is not None:
            _check_tensorboard(tensorboard, directory)
    except Refused as e:
        return f"refused {e}"
    except ModuleNotFoundError as e:
        return f"failed {option} needs the Python package {e.name} in {sys.executable}; {SETUP}"
    except Exception as e:  # noqa: BLE001 -- one line for the run to show
        return f"failed {option}: {_first_line(e)}"
    return "ready"


def _summary(follower: Follower) -> str:
    run = follower.run
    if not follower.syncs:
        return f"nothing exported: {run.dir} holds no run"
    trials = len({report["trial"] for report in run.reports()})
    parts = []
    for store in follower.syncs:
        if hasattr(store, "parent_id"):
            parts.append(f"to MLflow at {store.uri} (experiment {run.name}, parent run {store.parent_id})")
        else:
            parts.append(f"to TensorBoard event files in {store.out} (tensorboard --logdir {store.out})")
    return f"exported {trials} trials of {run.name} " + " and ".join(parts)


def _lines(stream: IO[str]) -> Iterator[str]:
    for line in stream:
        yield line.strip()


def serve(directory: Path, mlflow: Optional[str], tensorboard: Optional[Path]) -> int:
    """Answers the run on stdin and stdout, as the module says; returns the exit status."""
    answers = sys.stdout
    # What the libraries print must not come between the run and its answers.
    sys.stdout = sys.stderr
    requests = _lines(sys.stdin)

    def answer(text: str) -> None:
        answers.write(text + "\n")
        answers.flush()

    if next(requests, None) != "start":
        return 1
    verdict = _check(directory, mlflow, tensorboard)
    answer(verdict)
    if verdict != "ready":
        return 2 if verdict.startswith("refused") else 1
    follower = Follower(directory, mlflow=mlflow, tensorboard=tensorboard).start()
    finish = next(requests, None) == "finish"
    try:
        follower.stop()
    except Exception as e:  # noqa: BLE001 -- one line for the run to show
        if finish:
            options = " and ".join(name for name, on in (("--mlflow", mlflow), ("--tensorboard", tensorboard)) if on)
            answer(f"failed {options}: the export failed: {_first_line(e)}")
        return 1
    if finish:
        answer(f"done {_summary(follower)}")
    return 0
