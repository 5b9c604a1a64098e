#!/usr/bin/env bash
# Installs everything packtune needs on a fresh Debian 12 machine.
# Idempotent: when every package is already installed it only checks and exits.
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config
  libtorch-dev
  libopenblas0-pthread
  libzmq3-dev cppzmq-dev
  libcereal-dev
  libboost-program-options-dev
  catch2
  libhdf5-dev
  nlohmann-json3-dev
  hdf5-tools python3-h5py
  libspdlog-dev
  zlib1g-dev
  dataset-fashion-mnist
  python3-torch
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

# Debian's LibTorch links libblas.so.3; without OpenBLAS selected as its alternative it uses the
# reference BLAS, which trains about 7x slower.
arch_lib="/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
if [ -e "$arch_lib/openblas-pthread/libblas.so.3" ]; then
  $sudo update-alternatives --set "libblas.so.3-$(basename "$arch_lib")" "$arch_lib/openblas-pthread/libblas.so.3" >/dev/null 2>&1 || true
  $sudo update-alternatives --set "liblapack.so.3-$(basename "$arch_lib")" "$arch_lib/openblas-pthread/liblapack.so.3" >/dev/null 2>&1 || true
fi
echo "setup: done"
