"""Finding the ``packtune`` binary: an argument, ``$PACKTUNE_BIN``, or ``PATH``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Optional, Union

from .errors import BinaryNotFound

__all__ = ["find_binary", "PathLike"]

PathLike = Union[str, "os.PathLike[str]"]


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binary(binary: Optional[PathLike] = None) -> Path:
    """Return the ``packtune`` binary to run.

    The first of: ``binary`` (a path, or a name looked up on ``PATH``), the environment's
    ``PACKTUNE_BIN``, and ``packtune`` on ``PATH``. A binary given but not there is an error
    too, rather than a silent fall back to another one that may be of another version.

    Raises:
        BinaryNotFound: one line naming what was looked for.
    """
    if binary is not None:
        return _named(str(binary), "binary=")
    env = os.environ.get("PACKTUNE_BIN")
    if env:
        return _named(env, "PACKTUNE_BIN=")
    found = shutil.which("packtune")
    if found:
        return Path(found)
    raise BinaryNotFound(
        "packtune: no binary found: no binary= argument, PACKTUNE_BIN is not set, and no packtune on PATH; "
        "build it (cmake --build build --target packtune) and set PACKTUNE_BIN=build/src/packtune"
    )


def _named(name: str, source: str) -> Path:
    path = Path(name).expanduser()
    if _executable(path):
        return path.resolve()
    # A bare name ("packtune") is a command, as a shell would take it.
    if os.sep not in name:
        found = shutil.which(name)
        if found:
            return Path(found)
    raise BinaryNotFound(f"packtune: {source}{name} is not an executable file, nor a command on PATH")
