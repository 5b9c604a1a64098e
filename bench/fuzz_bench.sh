#!/usr/bin/env bash
# 10^6 inputs through each fuzz target, from its seeds (docs/fuzzing.md), and one JSON object
# with each target's execs/s, coverage (edges, features), corpus, peak memory and crashes.
# Needs the fuzz build: cmake --build build-fuzz --target fuzz (docs/fuzzing.md configures it).
# Usage: bench/fuzz_bench.sh [fuzz/fuzz.sh options: --build DIR --jobs J --out DIR TARGET...]
#        PACKTUNE_FUZZ_RUNS=N changes the inputs per target.
# A crash makes it exit 1, as fuzz/fuzz.sh does; its figures are printed all the same.
exec "$(dirname "$0")/../fuzz/fuzz.sh" --runs "${PACKTUNE_FUZZ_RUNS:-1000000}" "$@"
