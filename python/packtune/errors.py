"""The errors the package raises, one class per way a packtune command ends badly."""

from __future__ import annotations

from typing import Optional

__all__ = ["PacktuneError", "BinaryNotFound", "ConfigError", "RunError"]

# The prefix of every error line the CLI prints (src/util/subcommand.hpp).
CLI_PREFIX = "packtune: error: "


class PacktuneError(Exception):
    """Base class of every error this package raises."""


class BinaryNotFound(PacktuneError, FileNotFoundError):
    """No ``packtune`` binary where the package looked; the message says where that was."""


class ConfigError(PacktuneError, ValueError):
    """The CLI refused its input (exit code 2): a bad config key, option or file.

    ``line`` is the line the CLI printed, ``packtune: error: ...``; the message is that line
    without its prefix.
    """

    def __init__(self, line: str) -> None:
        self.line = line
        super().__init__(strip_prefix(line))


class RunError(PacktuneError, RuntimeError):
    """A command failed (exit code 1, or killed by a signal).

    ``line`` is the CLI's error line (empty when it printed none), ``log_tail`` the last lines
    of the run's ``driver.log`` (or of the command's output when there is no log), and
    ``returncode`` the exit status (negative: killed by that signal).
    """

    def __init__(self, line: str, log_tail: str, returncode: int, log: Optional[str] = None) -> None:
        self.line = line
        self.log_tail = log_tail
        self.returncode = returncode
        self.log = log
        head = strip_prefix(line) if line else f"packtune exited with status {returncode}"
        where = f"the last lines of {log}" if log else "its last output"
        message = head if not log_tail.strip() else f"{head}\n{where}:\n{log_tail.rstrip()}"
        super().__init__(message)


def strip_prefix(line: str) -> str:
    """The CLI's error line without ``packtune: error: ``."""
    return line[len(CLI_PREFIX):] if line.startswith(CLI_PREFIX) else line


def error_line(stderr: str) -> str:
    """The last ``packtune: error:`` line of a command's stderr, else its last non-empty line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(CLI_PREFIX):
            return line
    return lines[-1] if lines else ""
