"""Running ``packtune run`` from Python (the config, the overrides, the progress, the errors),
and :class:`Run`, a results folder that can also be resumed and exported."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, Any, List, Mapping, Optional, Union

from .binary import PathLike, find_binary
from .errors import ConfigError, RunError, error_line
from .experiment import RunFolder, results_folder
from .progress import make_progress
from .trackers.mlflow_export import export_mlflow
from .trackers.tensorboard_export import export_tensorboard

__all__ = ["Run", "load", "run", "resume", "override_flags"]

ConfigLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]

# Lines of driver.log a RunError shows.
_TAIL_LINES = 20


class Run(RunFolder):
    """The results folder of one ``packtune run`` (its ``--out``), finished or not: what
    :class:`RunFolder` reads, and what continues and exports it.

    Args:
        directory: the results folder.
        binary: the ``packtune`` binary that :meth:`resume` runs (default: as :func:`run`).
    """

    def __init__(self, directory: PathLike, binary: Optional[PathLike] = None) -> None:
        super().__init__(directory)
        self.binary = binary

    def resume(self, **overrides: Any) -> "Run":
        """Continue this experiment (``packtune run --resume DIR``) and return it when done.

        Takes the keyword arguments of :func:`packtune.run` except ``config`` and ``out``.
        """
        return resume(self.dir, binary=self.binary, **overrides)

    def to_mlflow(self, uri: Optional[str] = None) -> str:
        """Export to MLflow: a parent run for the experiment, one nested run per trial; returns
        the parent run's id. ``uri``: a tracking URI, or a folder for a local store; default a
        local store in ``./mlruns``."""
        return export_mlflow(self, uri)

    def to_tensorboard(self, out: PathLike) -> Path:
        """Export to TensorBoard: one event file per trial under ``out``; returns ``out``."""
        return export_tensorboard(self, Path(out))


def load(directory: PathLike, binary: Optional[PathLike] = None) -> Run:
    """The experiment whose results are in ``directory`` (a ``packtune run``'s ``--out``).

    Raises:
        FileNotFoundError: ``directory`` holds no ``config.json``.
    """
    return Run(results_folder(directory), binary=binary)


def override_flags(overrides: Mapping[str, Any]) -> List[str]:
    """The CLI's flags for keyword overrides: ``max_pack=4`` is ``--max-pack 4``, ``quiet=True``
    is ``--quiet``; False and None leave a flag out. A name the CLI lacks is left for it to
    refuse, so that its one line (a ConfigError) names it."""
    flags: List[str] = []
    for key, value in overrides.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                flags += [flag, str(item)]
        else:
            flags += [flag, str(value)]
    return flags


def _default_name(config: Mapping[str, Any], path: Optional[Path]) -> str:
    name = config.get("name")
    if isinstance(name, str) and name:
        return name
    # The CLI's rule for a config without a name (docs/config.md): the file's stem, with _
    # for the characters a name may not hold.
    stem = path.stem if path else "experiment"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", stem)


def run(
    config: ConfigLike,
    *,
    out: Optional[PathLike] = None,
    binary: Optional[PathLike] = None,
    progress: Any = "auto",
    mlflow: Union[None, bool, str] = None,
    tensorboard: Optional[PathLike] = None,
    **overrides: Any,
) -> Run:
    """Run a tuning experiment with ``packtune run`` and return its results once it ends.

    Args:
        config: a config file's path, or the config as a dict. A dict's relative paths (its
            ``data`` files, plugins) are relative to the current folder, as a file's are to
            its own folder.
        out: the results folder (``--out``); default ``runs/NAME-YYYYmmdd-HHMMSS``, as the CLI.
        binary: the ``packtune`` binary (default: ``$PACKTUNE_BIN``, else ``packtune`` on PATH).
        progress: ``"auto"`` (a tqdm bar where tqdm is installed, else the CLI's status lines),
            ``"bar"``, ``"lines"``, or ``"none"``.
        mlflow: export to MLflow while it runs, the reports a few seconds behind: a tracking
            URI, a folder for a local store, or True for a local store in ``./mlruns``
            (``packtune run --mlflow``; it overrides the config's ``export.mlflow``).
        tensorboard: export to TensorBoard event files in this folder while it runs
            (``packtune run --tensorboard``).
        **overrides: the CLI's options, by name: ``trials``, ``actors``, ``device``, ``seed``,
            ``tuner``, ``max_pack``, ``fuse``, ``precision``, ``keep_checkpoints``, ``quiet``,
            ... (``packtune run --help``).

    Raises:
        ConfigError: the CLI refused the config or an override (exit 2), with its line; an
            export to a TensorBoard folder that holds another export too.
        RunError: the run failed (exit 1), with the last lines of its ``driver.log``; or its
            export did (no MLflow or TensorBoard, a store that does not answer).
        KeyboardInterrupt: interrupted; the run is stopped as by Ctrl-C, and ``resume()``
            continues it.
    """
    program = find_binary(binary)
    temporary: Optional[Path] = None
    if isinstance(config, Mapping):
        name = _default_name(config, None)
        body = dict(config)
        body.setdefault("name", name)
        temporary = _write_config(body)
        config_path = temporary
    else:
        config_path = Path(config)
        try:
            name = _default_name(json.loads(config_path.read_text(encoding="utf-8")), config_path)
        except (OSError, ValueError, AttributeError):
            name = ""  # not a JSON object: the CLI says what is wrong with the file
    if out is None and name:
        out = Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    args = [str(program), "run", str(config_path)] + (["--out", str(out)] if out is not None else [])
    try:
        _wait(args + override_flags(overrides) + _export_flags(mlflow, tensorboard),
              Path(out) if out is not None else None, progress, name)
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
    assert out is not None  # a config whose name could not be read was refused above
    return Run(Path(out), binary=binary)


def resume(
    directory: PathLike,
    *,
    binary: Optional[PathLike] = None,
    progress: Any = "auto",
    mlflow: Union[None, bool, str] = None,
    tensorboard: Optional[PathLike] = None,
    **overrides: Any,
) -> Run:
    """Continue the experiment in ``directory`` (``packtune run --resume DIR``); takes
    :func:`run`'s ``binary``, ``progress``, ``mlflow``, ``tensorboard`` and overrides, and
    raises its errors. An export goes on in the runs an earlier one made, each report once."""
    program = find_binary(binary)
    args = [str(program), "run", "--resume", str(directory)] + override_flags(overrides)
    _wait(args + _export_flags(mlflow, tensorboard), Path(directory), progress, Path(directory).name)
    return Run(Path(directory), binary=binary)


def _write_config(config: Mapping[str, Any]) -> Path:
    # In the current folder, so that the config's relative paths mean what they say there.
    for folder in (Path.cwd(), Path(tempfile.gettempdir())):
        try:
            handle, name = tempfile.mkstemp(prefix=".packtune-config-", suffix=".json", dir=folder)
        except OSError:
            continue
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(config, file, indent=2)
        return Path(name)
    raise OSError("cannot write a config file in the current folder or the temporary folder")


def _export_flags(mlflow: Union[None, bool, str], tensorboard: Optional[PathLike]) -> List[str]:
    # --mlflow=URI, never --mlflow URI: the CLI takes a loose word after --mlflow for CONFIG
    # where the command line has none besides.
    flags = ["--mlflow"] if mlflow is True else [f"--mlflow={mlflow}"] if mlflow else []
    return flags + (["--tensorboard", str(tensorboard)] if tensorboard is not None else [])


def _wait(args: List[str], out: Optional[Path], progress: Any, description: str) -> None:
    display = make_progress(progress, description)
    errors: "deque[str]" = deque(maxlen=200)
    output: "deque[str]" = deque(maxlen=_TAIL_LINES)
    child = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, bufsize=1, start_new_session=True)
    reader = threading.Thread(target=_collect, args=(child.stderr, errors), daemon=True)
    reader.start()
    try:
        assert child.stdout is not None
        for line in child.stdout:
            line = line.rstrip("\n")
            output.append(line)
            display.line(line)
        child.wait()
    except KeyboardInterrupt:
        # Its own session, so a notebook's interrupt reaches it only from here: stopped as by
        # Ctrl-C, it keeps its results and checkpoints for resume().
        child.send_signal(signal.SIGINT)
        child.wait()
        raise
    finally:
        display.close()
        reader.join()
    stderr = "".join(errors)
    code = child.returncode
    if code == 0:
        if stderr.strip():
            sys.stderr.write(stderr)
        return
    line = error_line(stderr)
    if code == 2:
        raise ConfigError(line)
    log = out / "driver.log" if out is not None and (out / "driver.log").is_file() else None
    tail = _tail(log) if log else "\n".join(output)
    raise RunError(line, tail, code, str(log) if log else None)


def _collect(stream: Optional[IO[str]], into: "deque[str]") -> None:
    assert stream is not None
    for line in stream:
        into.append(line)


def _tail(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace") as file:
        return "".join(deque(file, maxlen=_TAIL_LINES))
