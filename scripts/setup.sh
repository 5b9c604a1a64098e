#!/usr/bin/env bash
# Installs everything packtune needs on a fresh Debian 12 machine: Debian's packages (LibTorch
# 1.13 for the CPU build) and, for the second build scripts/check.sh runs, the LibTorch 2.x of
# PyPI's CUDA torch wheel in a virtual environment at $PACKTUNE_TORCH2_VENV (default
# ~/.cache/packtune/torch2-venv; --no-torch2 skips it). That build compiles the CUDA code and
# needs NVIDIA's CUDA toolkit 13 in /usr/local/cuda, which Debian does not package.
# --minimal: only what building and running packtune needs (the README's Quick start): no
# second LibTorch, and none of the tools of the test suite, fuzzing and benchmarks.
# --python (with --minimal): the Python package's needs too (python/, docs/python.md): Debian's
# pandas, matplotlib, tqdm and pytest, and PyPI's MLflow and TensorBoard, which Debian lacks,
# in a virtual environment at $PACKTUNE_PYTHON_VENV (default ~/.cache/packtune/python-venv) that
# sees Debian's packages. The full install always makes it: the test suite needs it.
# Idempotent: when everything is installed it only checks and exits.
set -euo pipefail

with_torch2=1
minimal=0
with_python=1
for arg in "$@"; do
  case "$arg" in
    --no-torch2) with_torch2=0 ;;
    --minimal) minimal=1; with_torch2=0 ;;
    --python) with_python=2 ;;
    *) echo "usage: scripts/setup.sh [--no-torch2 | --minimal [--python]]" >&2; exit 2 ;;
  esac
done
if [ "$minimal" -eq 1 ] && [ "$with_python" -eq 1 ]; then with_python=0; fi

# Building and running packtune.
packages=(
  build-essential cmake ccache pkg-config
  libtorch-dev
  libopenblas0-pthread
  libzmq3-dev cppzmq-dev
  libcereal-dev
  libboost-program-options-dev
  catch2  # small; CMake looks for it whenever the tests are configured (the default)
  libhdf5-dev
  nlohmann-json3-dev
  libspdlog-dev libfmt-dev
  zlib1g-dev
  libdeflate-dev  # decodes IDX files whole, faster than zlib (datasets/idx.cpp)
  libjemalloc-dev  # the driver's allocator (src/CMakeLists.txt)
  dataset-fashion-mnist
  python3-plotly  # plotly.js, which `packtune report` embeds into the binary (the build needs it)
)
# The test suite, fuzzing and benchmarks.
test_packages=(
  hdf5-tools python3-h5py python3-numpy
  python3-sklearn  # the tabular example writes scikit-learn's digits to HDF5 (examples/digits)
  python3-torch python3-venv
  python3-torchvision  # examples/torchscript/export.py scripts torchvision's ResNet-18
  clang libclang-rt-14-dev  # the fuzz targets: libFuzzer and the sanitizers' runtimes (fuzz/)
  linux-perf  # profiling the driver under bench/load_bench (docs/benchmarks.md)
  chromium        # cli/report opens a report in headless Chromium (skipped without it)
)
# For the cluster tests (tests/e2e/): a private Slurm and munged, sshd in network
# namespaces. The tests start their own daemons with their own configs, ports and sockets;
# the system's services are kept from starting (see below).
daemon_packages=(slurmd slurmctld munge openssh-server)
test_packages+=("${daemon_packages[@]}" slurm-client openssh-client iproute2)
# The fault tests (label faults): inotifywait kills a driver the moment a checkpoint is being
# written; util-linux's unshare/mount give a small tmpfs for a disk that fills.
test_packages+=(inotify-tools util-linux)
# The Python package (python/) and its tests; its virtual environment is made below.
python_packages=(python3-pandas python3-matplotlib python3-tqdm python3-pytest python3-venv)
if [ "$minimal" -eq 0 ]; then packages+=("${test_packages[@]}"); else daemon_packages=(); fi
if [ "$with_python" -ne 0 ]; then packages+=("${python_packages[@]}"); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages already installed"
else
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq

  # Debian's postinst scripts start munged, sshd and the Slurm daemons and enable them at boot.
  # None of that is wanted by the tests and a system munged or slurmd could answer a test's
  # clients: a policy-rc.d that says "no" keeps them from starting during this install, and
  # the services this run installed are disabled afterwards. Where a policy-rc.d is already
  # in place (containers) it is left alone.
  new_daemons=()
  for p in "${daemon_packages[@]}"; do
    if [[ " ${missing[*]} " == *" $p "* ]]; then new_daemons+=("$p"); fi
  done
  policy=/usr/sbin/policy-rc.d
  made_policy=0
  if [ ${#new_daemons[@]} -gt 0 ] && [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# written by packtune scripts/setup.sh while it installs daemons\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod 755 "$policy"
    made_policy=1
    trap '$sudo rm -f "$policy"' EXIT
  fi
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  if [ "$made_policy" -eq 1 ]; then $sudo rm -f "$policy"; trap - EXIT; fi
  for p in "${new_daemons[@]}"; do
    case "$p" in openssh-server) service=ssh ;; *) service="$p" ;; esac
    if [ -d /run/systemd/system ]; then
      $sudo systemctl disable --now "$service" >/dev/null 2>&1 || true
    else
      $sudo update-rc.d "$service" disable >/dev/null 2>&1 || true
      $sudo service "$service" stop >/dev/null 2>&1 || true
    fi
  done
  if [ ${#new_daemons[@]} -gt 0 ]; then
    echo "setup: ${new_daemons[*]} installed with their services stopped and disabled (the cluster tests start their own)"
  fi

  # Debian's LibTorch links libblas.so.3; without OpenBLAS selected as its alternative it uses
  # the reference BLAS, which trains about 7x slower.
  arch_lib="/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
  if [ -e "$arch_lib/openblas-pthread/libblas.so.3" ]; then
    $sudo update-alternatives --set "libblas.so.3-$(basename "$arch_lib")" "$arch_lib/openblas-pthread/libblas.so.3" >/dev/null 2>&1 || true
    $sudo update-alternatives --set "liblapack.so.3-$(basename "$arch_lib")" "$arch_lib/openblas-pthread/liblapack.so.3" >/dev/null 2>&1 || true
  fi
fi

# MLflow and TensorBoard for `packtune export --mlflow/--tensorboard` and the Python package:
# from PyPI (Debian has neither), in a virtual environment, since Debian's pip refuses to
# install into the system's Python (PEP 668). --system-site-packages: Debian's pandas,
# matplotlib, tqdm and pytest are used as they are.
mlflow_version=3.17.2
tensorboard_version=2.21.0
if [ "$with_python" -ne 0 ]; then
  py_venv="${PACKTUNE_PYTHON_VENV:-$HOME/.cache/packtune/python-venv}"
  py_marker="$py_venv/.packtune-mlflow-$mlflow_version-tensorboard-$tensorboard_version"
  if [ -e "$py_marker" ]; then
    echo "setup: MLflow $mlflow_version and TensorBoard $tensorboard_version already in $py_venv"
  else
    echo "setup: installing PyPI's mlflow $mlflow_version and tensorboard $tensorboard_version into $py_venv"
    rm -rf "$py_venv"
    /usr/bin/python3 -m venv --system-site-packages "$py_venv"
    "$py_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      "mlflow==$mlflow_version" "tensorboard==$tensorboard_version"
    touch "$py_marker"
  fi
fi

[ "$with_torch2" -eq 1 ] || exit 0

# LibTorch 2.x: the torch wheel without its declared dependencies (CUDA 13.2's runtime, cuBLAS,
# cuDNN, ..., Triton: gigabytes that duplicate the toolkit's CUDA 13.0 libraries), plus the four
# libraries libtorch_cuda.so needs that the toolkit lacks (cuFile, cuSPARSELt, NVSHMEM) or has
# too old (NCCL), at the versions the wheel pins. Nothing here imports
# torch in Python, so its pure-Python dependencies are left out too.
torch2_version=2.15.0
venv="${PACKTUNE_TORCH2_VENV:-$HOME/.cache/packtune/torch2-venv}"
marker="$venv/.packtune-torch-$torch2_version"
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "setup: warning: no CUDA toolkit (nvcc); the LibTorch $torch2_version build needs CUDA 13 in /usr/local/cuda" >&2
fi
if [ -e "$marker" ]; then
  echo "setup: LibTorch $torch2_version already in $venv"
  exit 0
fi
echo "setup: installing PyPI's torch $torch2_version (LibTorch, CUDA) into $venv"
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
"${pip[@]}" --no-deps "torch==$torch2_version"
metadata=$("$venv/bin/python" -c "import importlib.metadata as m; print(m.metadata('torch'))")
pins=$(grep -oE '^Requires-Dist: (nvidia-(nccl|cusparselt|nvshmem)-cu[0-9]+==[^ ;]+)' <<<"$metadata" | cut -d' ' -f2)
toolkit=$(grep -oE '^Requires-Dist: cuda-toolkit\[[^]]*\]==[^ ;]+' <<<"$metadata" | sed -E 's/.*\]==//')
if [ "$(wc -w <<<"$pins")" -ne 3 ] || [ -z "$toolkit" ]; then
  echo "setup: torch $torch2_version's metadata does not name the CUDA libraries expected; update scripts/setup.sh" >&2
  exit 1
fi
# pip warns that the wheel's other dependencies are missing, as intended: shown only on failure.
# shellcheck disable=SC2086
if ! "${pip[@]}" $pins "cuda-toolkit[cufile]==$toolkit" 2>"$venv/pip.log"; then
  cat "$venv/pip.log" >&2
  exit 1
fi
touch "$marker"
echo "setup: done"
