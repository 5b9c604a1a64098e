#!/usr/bin/env bash
# Runs the Python package's tests (python/packtune, these test_*.py) with pytest against the
# packtune binary given first; the other arguments go to pytest (a test file, -k NAME).
# The Python is the virtual environment scripts/setup.sh makes ($PACKTUNE_PYTHON_VENV, default
# ~/.cache/packtune/python-venv: Debian's pandas, pytest and tqdm, PyPI's MLflow and
# TensorBoard), else Debian's /usr/bin/python3, where the tracker tests fail for want of them.
set -euo pipefail
packtune="${1:?usage: run_pytest.sh PACKTUNE [pytest arguments...]}"
shift
here="$(cd "$(dirname "$0")" && pwd)"
venv="${PACKTUNE_PYTHON_VENV:-$HOME/.cache/packtune/python-venv}"
py=/usr/bin/python3
[ -x "$venv/bin/python" ] && py="$venv/bin/python"
export PACKTUNE_BIN="$(realpath "$packtune")"  # the tests run in their own folder
# The package as it is in this tree, not a copy pip may have installed.
export PYTHONPATH="$here/../../python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
cd "$here"
exec "$py" -m pytest -q -p no:cacheprovider "$@"
