"""``packtune simulate`` against an objective written in Python, served through the exec:CMD
protocol (docs/tuners.md) with no wrapper script."""

from __future__ import annotations

import inspect
import json
import math
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Union

from .binary import find_binary
from .errors import ConfigError, RunError, error_line
from .launch import override_flags

if TYPE_CHECKING:
    import pandas

__all__ = ["simulate", "Simulation"]

_RELAY = Path(__file__).with_name("_relay.py")


class Simulation:
    """What ``packtune simulate --json`` printed: every event, and the summary."""

    def __init__(self, events: List[Dict[str, Any]]) -> None:
        self.events = [e for e in events if e.get("event") != "summary"]
        summaries = [e for e in events if e.get("event") == "summary"]
        self.summary: Dict[str, Any] = summaries[-1] if summaries else {}

    def results(self) -> "pandas.DataFrame":
        """One row per result event: trial, budget, metric, the simulated time ``t``, and
        ``stopped`` where the tuner stopped the job early."""
        import pandas

        rows = [{k: v for k, v in e.items() if k != "event"} for e in self.events if e.get("event") == "result"]
        return pandas.DataFrame(rows)

    def best(self) -> Dict[str, Any]:
        """The best trial: ``trial``, ``metric``, ``budget`` and ``config``."""
        s = self.summary
        return {"trial": s.get("best_trial"), "metric": s.get("best_metric"), "budget": s.get("best_budget"),
                "config": s.get("best_config")}


def simulate(
    config: Optional[Union[str, "os.PathLike[str]", Mapping[str, Any]]] = None,
    *,
    objective: Callable[..., Any],
    binary: Optional[Union[str, "os.PathLike[str]"]] = None,
    tuner_settings: Optional[Mapping[str, Any]] = None,
    **options: Any,
) -> Simulation:
    """Run a tuner in simulated time against ``objective``, a Python function.

    ``objective(config, budget)`` returns the metric of a trial of hyper-parameters ``config``
    (a dict) trained to ``budget``: a number, a ``(metric, cost)`` pair, or a dict with
    ``metric`` and optionally ``cost`` (simulated seconds; docs/tuners.md). It is also given
    ``trial`` (the 0-based trial index) and ``start`` (the budget the job started from) when it
    takes parameters of those names or ``**kwargs``. It runs in this process, in the calling
    thread, so it may use anything in scope.

    Args:
        config: a config (path or dict) with the tuner, budget, metric, mode, space and seed.
        objective: the function above.
        binary: the ``packtune`` binary (default: ``$PACKTUNE_BIN``, else PATH).
        tuner_settings: ``--tuner-setting KEY=VALUE`` for each item.
        **options: ``packtune simulate``'s options by name: ``tuner``, ``trials``, ``workers``,
            ``seed``, ``min_budget``, ``max_budget``, ``eta``, ``mode``, ``report_every``,
            ``objective_timeout``, ...

    Raises:
        ConfigError: the CLI refused the config or an option (exit 2), with its line.
        RunError: the simulation failed (exit 1), with the CLI's line.
        Exception: whatever ``objective`` raised, once the simulation has stopped.
    """
    program = find_binary(binary)
    extras = _extra_arguments(objective)
    with tempfile.TemporaryDirectory(prefix="packtune-simulate-") as folder:
        args = [str(program), "simulate"]
        if isinstance(config, Mapping):
            path = Path(folder) / "config.json"
            path.write_text(json.dumps(dict(config)), encoding="utf-8")
            args.append(str(path))
        elif config is not None:
            args.append(str(config))
        address = str(Path(folder) / "objective.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(address)
        listener.listen(1)
        command = f"{shlex.quote(sys.executable)} {shlex.quote(str(_RELAY))} {shlex.quote(address)}"
        args += ["--objective", "exec:" + command, "--json"]
        for key, value in (tuner_settings or {}).items():
            args += ["--tuner-setting", f"{key}={value}"]
        args += override_flags(options)
        child = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        stdout: List[str] = []
        stderr: "deque[str]" = deque(maxlen=200)
        readers = [threading.Thread(target=lambda s=s, into=into: into.extend(s), daemon=True)
                   for s, into in ((child.stdout, stdout), (child.stderr, stderr))]
        for reader in readers:
            reader.start()
        failure: Optional[BaseException] = None
        try:
            connection = _accept(listener, child)
            if connection is not None:
                failure = _serve(connection, objective, extras)
        except BaseException:
            child.kill()
            raise
        finally:
            listener.close()
            child.wait()
            for reader in readers:
                reader.join()
    if failure is not None:
        raise failure
    code = child.returncode
    errors = "".join(stderr)
    if code == 2:
        raise ConfigError(error_line(errors))
    if code != 0:
        raise RunError(error_line(errors), errors, code)
    return Simulation([json.loads(line) for line in stdout if line.strip()])


def _extra_arguments(objective: Callable[..., Any]) -> List[str]:
    try:
        parameters = inspect.signature(objective).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: config and budget only
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return ["trial", "start"]
    return [p.name for p in parameters if p.name in ("trial", "start")]


def _accept(listener: socket.socket, child: "subprocess.Popen[str]") -> Optional[socket.socket]:
    # packtune starts the relay only once the config is checked: a refused one ends the child
    # first, and nothing will connect.
    listener.settimeout(0.2)
    while True:
        try:
            connection, _ = listener.accept()
            connection.settimeout(None)
            return connection
        except socket.timeout:
            if child.poll() is not None:
                return None


def _serve(connection: socket.socket, objective: Callable[..., Any], extras: List[str]) -> Optional[BaseException]:
    """Answers requests until packtune ends the relay; returns what the objective raised (the
    connection then closes, so the relay exits and packtune stops)."""
    with connection, connection.makefile("r", encoding="utf-8") as requests:
        for line in requests:
            request = json.loads(line)
            kwargs = {"trial": request["trial"], "start": request["from"]}
            try:
                value = objective(request["config"], request["budget"], **{k: kwargs[k] for k in extras})
                answer = _answer(value)
            except Exception as e:  # noqa: BLE001 -- raised again in the caller once packtune has stopped
                return e
            connection.sendall((json.dumps(answer) + "\n").encode("utf-8"))
    return None


def _answer(value: Any) -> Dict[str, Any]:
    if isinstance(value, Mapping):
        answer = dict(value)
    elif isinstance(value, tuple) and len(value) == 2:
        answer = {"metric": value[0], "cost": value[1]}
    else:
        answer = {"metric": value}
    metric = answer.get("metric")
    if not isinstance(metric, (int, float)) or isinstance(metric, bool) or not math.isfinite(metric):
        raise ValueError(f"the objective returned {value!r}: expected a finite number, (metric, cost), "
                         "or a dict with a finite 'metric'")
    answer["metric"] = float(metric)
    return answer
