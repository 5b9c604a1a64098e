#!/usr/bin/env bash
# The peers of bench/peers_bench.py (Ray Tune and Optuna) and bench/tuner_bench.py (Optuna; DEHB
# in a second venv) in virtual environments of their own, kept apart from scripts/setup.sh so that CI's setup
# does not get slower:
#
#   scripts/setup-peers.sh            # ~/.cache/packtune/peers-venv, or $PACKTUNE_PEERS_VENV
#                                     # (DEHB: ~/.cache/packtune/dehb-venv, or $PACKTUNE_DEHB_VENV)
#
# ray[tune] and optuna come from PyPI. torch is not installed again: PyPI's torch wheel is the
# CUDA build (with ~3 GB of CUDA dependencies), and scripts/setup.sh already puts that wheel,
# without its dependencies, in ~/.cache/packtune/torch2-venv ($PACKTUNE_TORCH2_VENV) for the
# LibTorch 2 build. A .pth file adds that venv's site-packages to this one, and torch's few
# pure-Python dependencies (typing_extensions, sympy, networkx, jinja2, filelock, fsspec) are
# installed here. On CPU, torch runs without the CUDA libraries. Without a torch2-venv (or
# with --own-torch) this installs PyPI's torch itself, with its dependencies.
set -euo pipefail

own_torch=0
for arg in "$@"; do
  case "$arg" in
    --own-torch) own_torch=1 ;;
    *) echo "usage: scripts/setup-peers.sh [--own-torch]" >&2; exit 2 ;;
  esac
done

venv="${PACKTUNE_PEERS_VENV:-$HOME/.cache/packtune/peers-venv}"
torch2="${PACKTUNE_TORCH2_VENV:-$HOME/.cache/packtune/torch2-venv}"
python="${PYTHON:-/usr/bin/python3}"

if [ ! -x "$venv/bin/python" ]; then
  echo "setup-peers: creating $venv with $python"
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)

site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
torch2_site=""
if [ "$own_torch" -eq 0 ] && [ -x "$torch2/bin/python" ]; then
  torch2_site=$("$torch2/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  [ -d "$torch2_site/torch" ] || torch2_site=""
fi

if [ -n "$torch2_site" ]; then
  echo "setup-peers: reusing torch from $torch2_site"
  echo "$torch2_site" > "$site/packtune-torch2.pth"
  "${pip[@]}" "ray[tune]" optuna typing_extensions sympy networkx jinja2 filelock fsspec numpy
else
  rm -f "$site/packtune-torch2.pth"
  echo "setup-peers: installing PyPI's torch into $venv (no torch2-venv to reuse; several GB)"
  "${pip[@]}" "ray[tune]" optuna torch numpy
fi

# DEHB for bench/tuner_bench, in a venv of its own: it pins numpy < 2, and Ray Tune's pyarrow
# refuses that numpy. Optional: the bench skips DEHB with a note where it did not install.
dehb_venv="${PACKTUNE_DEHB_VENV:-$HOME/.cache/packtune/dehb-venv}"
# The braces keep a venv that cannot be made from ending the script under set -e.
{ { [ -x "$dehb_venv/bin/python" ] || "$python" -m venv "$dehb_venv"; } &&
  "$dehb_venv/bin/python" -m pip install --quiet --disable-pip-version-check dehb; } ||
  echo "setup-peers: dehb did not install into $dehb_venv; build/bench/tuner_bench will skip it"

"$venv/bin/python" -c 'import torch, ray, optuna; from ray import tune
print("setup-peers: torch", torch.__version__, "ray", ray.__version__, "optuna", optuna.__version__)'
echo "setup-peers: done; build/bench/peers_bench finds $venv/bin/python (or set PACKTUNE_PEERS_PYTHON)"
