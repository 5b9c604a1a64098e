#!/usr/bin/env bash
# Fills .gpu/ (ignored by git) for a session that is lent a GPU machine: what
# the workplace's GPU prepare script gathers (the packages the GPU image lacks, Fashion-MNIST,
# build.sh), plus what packtune needs there beyond it:
#   .gpu/plotly.js  the report page's chart library: the build embeds it and the image has no
#                   python3-plotly, so without it CMake stops at configure
#   .gpu/h5tools/   hdf5-tools (h5dump) and its Debian HDF5, for the suite's checkpoint test; kept
#                   apart from .gpu/debs because the build links the image's own HDF5, and HDF5
#                   aborts a program whose headers and library versions differ
#   .gpu/wheels/    Optuna and its dependencies as wheels for the image's Python 3.12, so
#                   bench/gpu_figures.sh can run Optuna beside packtune (no package registry
#                   there). Not numpy (the image's torch brings it) and not Ray Tune: its
#                   wheels alone are larger than the 64 MiB a device call can carry.
# Then, on the GPU machine: bench/gpu_figures.sh (docs/building.md, "On a GPU machine").
#
#   scripts/gpu-prepare.sh [PREPARE]   PREPARE: the workplace's GPU prepare script (docs/building.md)
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
shared=${1:-$root/../shared/gpu/prepare.sh}
if [ ! -f "$shared" ]; then
  echo "gpu-prepare: no $shared (the workplace's GPU prepare script); pass its path" >&2
  exit 2
fi
bash "$shared"

plotly=/usr/share/python3-plotly/plotly.js
[ -f "$plotly" ] || { echo "gpu-prepare: no $plotly: install python3-plotly (scripts/setup.sh does)" >&2; exit 1; }
cp "$plotly" .gpu/plotly.js

# libdeflate, which the build links (datasets/idx.cpp); .gpu/build.sh unpacks every package here.
(cd .gpu/debs && apt-get download -q libdeflate-dev libdeflate0 2>&1 | grep -v '^W:' || true)
ls .gpu/debs/libdeflate-dev_*.deb .gpu/debs/libdeflate0_*.deb > /dev/null ||
  { echo "gpu-prepare: could not download libdeflate-dev and libdeflate0" >&2; exit 1; }

rm -rf .gpu/h5tools && mkdir -p .gpu/h5tools
(cd .gpu/h5tools && apt-get download -q hdf5-tools libhdf5-103-1 libhdf5-hl-100 libsz2 libaec0 2>&1 | grep -v '^W:' || true)
ls .gpu/h5tools/hdf5-tools_*.deb > /dev/null || { echo "gpu-prepare: could not download hdf5-tools" >&2; exit 1; }

# Any pip will do to download; the peers' venv pins the Optuna version peers_bench measures here.
pip_python=
for p in "$HOME/.cache/packtune/peers-venv/bin/python" "$HOME/.cache/packtune/torch2-venv/bin/python" /usr/bin/python3; do
  if [ -x "$p" ] && "$p" -m pip --version >/dev/null 2>&1; then pip_python=$p; break; fi
done
[ -n "$pip_python" ] || { echo "gpu-prepare: no python with pip (run scripts/setup.sh)" >&2; exit 1; }
optuna=optuna
if version=$("$HOME/.cache/packtune/peers-venv/bin/python" -c 'import optuna; print(optuna.__version__)' 2>/dev/null); then
  optuna="optuna==$version"
fi
rm -rf .gpu/wheels && mkdir -p .gpu/wheels
"$pip_python" -m pip download --quiet --disable-pip-version-check --dest .gpu/wheels --only-binary=:all: \
  --implementation cp --python-version 3.12 \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 "$optuna"
rm -f .gpu/wheels/numpy-*.whl

mib=$(du -sm .gpu | cut -f1)
if [ "$mib" -gt 62 ]; then
  echo "gpu-prepare: .gpu is $mib MiB; a device call carries at most 64 MiB in all" >&2
  exit 1
fi
echo "gpu-prepare: .gpu ready ($mib MiB: $(ls .gpu/wheels | wc -l) wheels, plotly.js, packages, data)."
echo "On the GPU machine (run with carry [\".gpu\"]), calls of under 10 minutes each (docs/building.md):"
echo "  bash bench/gpu_figures.sh build hyperband tests"
echo "  bash bench/gpu_figures.sh --resnet-precision bf16 build resnet experiment"
echo "  bash bench/gpu_figures.sh build cnn_always conv trace cnn"
echo "  bash bench/gpu_figures.sh build pack peers"
