#!/usr/bin/env bash
# Configures, builds every target and runs the whole test suite against both LibTorches that CI
# checks (scripts/setup.sh installs them):
#   debian  build/         Debian's LibTorch 1.13, CPU only
#   torch2  build-torch2/  the LibTorch 2.x of PyPI's CUDA torch wheel, in the virtual environment
#                          $PACKTUNE_TORCH2_VENV (default ~/.cache/packtune/torch2-venv): the CUDA
#                          code compiles and links against the toolkit in /usr/local/cuda, and the
#                          suite runs on the CPU (no GPU needed)
# and runs the fuzz targets a short while:
#   fuzz    build-fuzz/    the libFuzzer targets of fuzz/, built with clang under AddressSanitizer
#                          and UndefinedBehaviorSanitizer, each run $PACKTUNE_FUZZ_SECONDS (default
#                          20) from its seeds; any crash fails the check (docs/fuzzing.md)
# Usage: scripts/check.sh [debian|torch2|fuzz]...   (all three by default). PACKTUNE_JOBS sets the
# build's and the suite's parallelism (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${PACKTUNE_TORCH2_VENV:-$HOME/.cache/packtune/torch2-venv}"
jobs="${PACKTUNE_JOBS:-$(nproc)}"
builds=("$@")
[ ${#builds[@]} -gt 0 ] || builds=(debian torch2 fuzz)

check() {  # name, build dir, the Torch_DIR it must use, cmake arguments...
  local name=$1 dir=$2 torch_dir=$3
  shift 3
  local start=$SECONDS
  # A build folder the Quick start configured (Release) keeps its type: forcing RelWithDebInfo
  # on it would recompile everything it already built. A fresh one gets RelWithDebInfo.
  local type
  type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$dir/CMakeCache.txt" 2>/dev/null || true)
  type=${type:-RelWithDebInfo}
  echo "check: $name: configure, build and test in $dir/ ($type)"
  mkdir -p "$dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" "$@" >"$dir/configure.log" 2>&1 || {
    cat "$dir/configure.log"
    return 1
  }
  # A build folder configured by hand for another LibTorch would test the wrong one.
  local found
  found=$(sed -n 's/^Torch_DIR:PATH=//p' "$dir/CMakeCache.txt")
  if [ "$(realpath -m "$found")" != "$(realpath -m "$torch_dir")" ]; then
    echo "check: $dir/ uses the LibTorch in $found, not $torch_dir; remove $dir/ and run again" >&2
    return 1
  fi
  cmake --build "$dir" -j"$jobs"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs"
  echo "check: $name passed in $((SECONDS - start)) s"
}

# Not a CTest label of the other builds: the fuzz targets need clang and instrument every
# library they link, so they get a build folder of their own, and the two suites stay free of
# clang-only options.
fuzz() {
  local dir=build-fuzz start=$SECONDS
  echo "check: fuzz: build and run the fuzz targets in $dir/"
  command -v clang++ >/dev/null || { echo "check: no clang++; run scripts/setup.sh" >&2; return 1; }
  mkdir -p "$dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DPACKTUNE_BUILD_FUZZ=ON -DPACKTUNE_BUILD_TESTS=OFF -DPACKTUNE_BUILD_BENCH=OFF >"$dir/configure.log" 2>&1 || {
    cat "$dir/configure.log"
    return 1
  }
  cmake --build "$dir" -j"$jobs" --target fuzz
  fuzz/fuzz.sh --build "$dir" --seconds "${PACKTUNE_FUZZ_SECONDS:-20}" --jobs "$jobs"
  echo "check: fuzz passed in $((SECONDS - start)) s"
}

for build in "${builds[@]}"; do
  case "$build" in
    debian)
      multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
      check debian build "/usr/lib/$multiarch/cmake/Torch"
      ;;
    torch2)
      # torch.utils.cmake_prefix_path, found without importing torch (which needs more packages).
      prefix=$("$venv/bin/python" -c "import importlib.util, os; \
print(os.path.join(os.path.dirname(importlib.util.find_spec('torch').origin), 'share', 'cmake'))") || {
        echo "check: no torch in $venv; run scripts/setup.sh" >&2
        exit 1
      }
      # The Python package's tests run in the debian build: they test the package, not LibTorch.
      check torch2 build-torch2 "$prefix/Torch" -DCMAKE_PREFIX_PATH="$prefix" -DPACKTUNE_PYTHON_TESTS=OFF
      ;;
    fuzz)
      fuzz
      ;;
    *)
      echo "usage: scripts/check.sh [debian|torch2|fuzz]..." >&2
      exit 2
      ;;
  esac
done
