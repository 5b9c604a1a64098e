"""packtune from Python: run experiments, read their results as pandas DataFrames, simulate
tuners against Python objectives, and export runs to MLflow and TensorBoard.

The package is pure Python and drives the ``packtune`` binary (``find_binary`` says how it
is found). The walk-through is docs/python.md in the packtune repository.
"""

from .binary import find_binary
from .errors import BinaryNotFound, ConfigError, PacktuneError, RunError
from .launch import Run, load, resume, run
from .simulation import Simulation, simulate

__all__ = [
    "BinaryNotFound",
    "ConfigError",
    "PacktuneError",
    "Run",
    "RunError",
    "Simulation",
    "find_binary",
    "load",
    "resume",
    "run",
    "simulate",
]
__version__ = "0.1.0"
