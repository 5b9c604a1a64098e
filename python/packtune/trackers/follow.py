"""Exporting to the trackers while an experiment runs: the reports go to MLflow and TensorBoard
as they arrive in results.jsonl, a few seconds behind, and a ``--resume`` picks up where the
stores are (each sync writes only what they lack)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, List, Optional, Union

from ..binary import PathLike
from ..experiment import RunFolder

__all__ = ["Follower", "follow"]


class Follower:
    """Syncs a results folder to MLflow and/or TensorBoard from a thread, every ``interval``
    seconds, and once more when stopped.

    Args:
        directory: the results folder; it may not exist yet (the driver makes it).
        mlflow: an MLflow tracking URI, True for the local default (``./mlruns``), or None.
        tensorboard: the folder for TensorBoard's event files, or None.

    ``error`` is what the thread's last sync raised, None after one that went through.
    """

    def __init__(self, directory: PathLike, mlflow: Union[None, bool, str] = None,
                 tensorboard: Optional[PathLike] = None, interval: float = 2.0) -> None:
        self.run = RunFolder(Path(directory))
        self.mlflow = mlflow
        self.tensorboard = Path(tensorboard) if tensorboard is not None else None
        self.interval = interval
        self.syncs: List[Any] = []
        self.error: Optional[BaseException] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="packtune-follow", daemon=True)

    def start(self) -> "Follower":
        """Starts the thread."""
        self._thread.start()
        return self

    def _ready(self) -> bool:
        # The stores are named after the config as run and timed from its file: wait for it.
        if self.syncs:
            return True
        if not (self.run.dir / "config.json").is_file():
            return False
        if self.mlflow:
            from .mlflow_export import MlflowSync

            self.syncs.append(MlflowSync(self.run, None if self.mlflow is True else str(self.mlflow)))
        if self.tensorboard is not None:
            from .tensorboard_export import TensorboardSync

            self.syncs.append(TensorboardSync(self.run, self.tensorboard))
        return True

    def sync(self) -> int:
        """One sync now; returns how many reports went to the first store."""
        if not self._ready():
            return 0
        counts = [store.sync() for store in self.syncs]
        return counts[0] if counts else 0

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sync()
                self.error = None
            except Exception as e:  # noqa: BLE001 -- a store that failed once is tried again
                # A long run outlasts a tracking server's restart: the next sync catches up,
                # since a sync writes only what the store lacks.
                self.error = e

    def stop(self) -> None:
        """Stops the thread, syncs the last reports and ends the stores' runs.

        Raises:
            Exception: what the last sync raised (a tracker's library missing, its store
                refusing); the syncs before it that failed were tried again.
        """
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.sync()
        for store in self.syncs:
            if hasattr(store, "finish"):
                store.finish()
            else:
                store.close()


def follow(directory: PathLike, mlflow: Union[None, bool, str] = None,
           tensorboard: Optional[PathLike] = None, interval: float = 2.0) -> Follower:
    """Exports a running experiment as it goes, until its journal says it finished (or
    KeyboardInterrupt: the stores keep what they have, and a later call goes on); returns the
    Follower, whose ``syncs`` are the stores' (MLflow's first)."""
    follower = Follower(directory, mlflow, tensorboard, interval)
    try:
        while not follower.run.finished():
            follower.sync()
            time.sleep(interval)
    finally:
        follower.stop()
    return follower
