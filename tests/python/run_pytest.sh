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
export PACKTUNE_BIN="$(realpath "$packtune")"  # the tests run in a folder of their own
# The package as it is in this tree, not a copy pip may have installed.
export PYTHONPATH="$here/../../python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
# In a folder of their own, not the source tree: MLflow puts the artifacts of a store given by
# URI into ./mlruns.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
args=()
for arg in "$@"; do
  case "$arg" in
    test_*.py) args+=("$here/$arg") ;;
    *) args+=("$arg") ;;
  esac
done
"$py" -m pytest -q -p no:cacheprovider --rootdir "$here" "${args[@]}"
