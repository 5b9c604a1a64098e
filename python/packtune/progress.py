"""Showing a run's progress from the lines ``packtune run`` prints when not on a terminal."""

from __future__ import annotations

import re
import sys
from typing import Any, Optional, TextIO

__all__ = ["Progress", "make_progress"]

# The driver's log lines: "[15:09:34] info trial   0 reached budget 1: ..." (spdlog's pattern,
# src/util/log_pattern.cpp); the summary at the end has no such prefix.
_LOG = re.compile(r"^\[\d\d:\d\d:\d\d\] (?P<level>\w+) (?P<text>.*)$")
# src/driver/driver_core.cpp: one line per finished job.
_JOB = re.compile(
    r"^trial\s+(?P<trial>\d+) reached budget (?P<budget>\S+): (?P<metric>\S+) (?P<value>\S+) "
    r"\| best (?P<best>\S+) \(trial (?P<best_trial>\d+)\) \| (?P<jobs>\d+) jobs done"
)
# src/driver/status_view.cpp: the status line every 15 s.
_STATUS = re.compile(r"^\[(?P<elapsed>[^,\]]+), (?P<left>[^\]]+)\] .*?; (?P<jobs>\d+) jobs done")


class Progress:
    """Prints a run's lines as the CLI does outside a terminal: every line, as it comes."""

    def __init__(self, stream: Optional[TextIO] = None) -> None:
        self.stream = stream

    def line(self, line: str) -> None:
        """One line of the CLI's stdout, without its newline."""
        stream = self.stream or sys.stdout
        print(line, file=stream, flush=True)

    def close(self) -> None:
        """The run ended."""


class Quiet(Progress):
    """Prints nothing."""

    def line(self, line: str) -> None:
        pass


class Bar(Progress):
    """A tqdm bar counting finished jobs, with the best value and the time left; warnings and
    the final summary are printed above it, the rest of the driver's info lines left to
    ``driver.log``."""

    def __init__(self, tqdm: Any, description: str) -> None:
        super().__init__()
        self.bar = tqdm(desc=description, unit="job", dynamic_ncols=True)
        self.best = ""
        self.left = ""

    def line(self, line: str) -> None:
        log = _LOG.match(line)
        if not log:
            self.bar.write(line)
            return
        if log["level"] != "info":
            self.bar.write(line)
            return
        text = log["text"]
        job = _JOB.match(text)
        status = _STATUS.match(text)
        if job:
            self.bar.update(int(job["jobs"]) - self.bar.n)
            self.best = f"{job['metric']} {job['best']} (trial {job['best_trial']})"
        elif status:
            self.bar.update(int(status["jobs"]) - self.bar.n)
            self.left = status["left"]
        else:
            return
        self.bar.set_postfix_str(", ".join(part for part in (self.best, self.left) if part))

    def close(self) -> None:
        # The time left was an estimate of the last status line; at the end it is stale.
        self.bar.set_postfix_str(self.best)
        self.bar.close()


def make_progress(progress: Any, description: str) -> Progress:
    """The display ``progress`` asks for: ``"auto"`` (a tqdm bar when tqdm is installed, the
    CLI's lines otherwise), ``"bar"``, ``"lines"``, or ``False``/``None``/``"none"`` for
    nothing."""
    if progress in (False, None, "none"):
        return Quiet()
    if progress == "lines":
        return Progress()
    if progress not in ("auto", "bar", True):
        raise ValueError(f"progress={progress!r}: expected 'auto', 'bar', 'lines' or 'none'")
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if progress == "bar":
            raise ImportError("progress='bar' needs tqdm (pip install tqdm, or Debian's python3-tqdm)") from None
        return Progress()
    return Bar(tqdm, description)
