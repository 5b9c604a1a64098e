#!/bin/sh
# Installs packtune's tuner library into a temporary prefix, builds examples/custom_tuner out
# of tree against it with find_package(packtune), and runs the plugin.
#   custom_tuner_test.sh CMAKE BUILD_DIR SOURCE_DIR PLUGIN_RUNNER [PACKTUNE]
set -eu
cmake=$1 build=$2 source=$3 runner=$4 packtune=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$cmake" --install "$build" --prefix "$work/prefix" --component tuners
test -f "$work/prefix/include/packtune/tuners/tuner_registry.hpp"
test -f "$work/prefix/include/packtune/packtune/error.hpp"

"$cmake" -S "$source/examples/custom_tuner" -B "$work/build" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release
"$cmake" --build "$work/build" -j1
plugin="$work/build/libmedian_stopping.so"
test -f "$plugin"

"$runner" "$plugin" median_stopping

if [ -n "$packtune" ]; then
  "$packtune" simulate --tuner-plugin "$plugin" --tuner median_stopping --objective synthetic \
    --min-budget 1 --max-budget 27 --trials 30 --report-every 1 --workers 4 --json \
    > "$work/events.jsonl"
  tail -n 1 "$work/events.jsonl" | grep -q '"event":"summary"'
  grep -q '"stopped":true' "$work/events.jsonl"

  # A run with the plugin from the command line, by a relative path: the config as run records
  # it (absolute), so --resume from another folder finds the tuner without the flag.
  cat > "$work/run.json" <<'JSON'
{"budget": {"min": 0.25, "max": 0.5, "report_every": 0.25}, "tuner": {"name": "median_stopping", "trials": 2},
 "actors": 1, "evaluate_test": false, "data": {"train_size": 256, "validation_size": 128},
 "model": {"depth": 1, "width": 16, "batch_size": 64}, "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.1}}}
JSON
  (cd "$work/build" && "$packtune" run "$work/run.json" --tuner-plugin ./libmedian_stopping.so --out "$work/run" --quiet \
    > "$work/run.out" 2>&1) || { cat "$work/run.out"; exit 1; }
  grep -q "\"tuner_plugin\": \"$plugin\"" "$work/run/config.json" || { cat "$work/run/config.json"; exit 1; }
  (cd / && "$packtune" run --resume "$work/run" > "$work/resume.out" 2>&1) || { cat "$work/resume.out"; exit 1; }
  grep -q "finished already" "$work/resume.out"
fi
echo "custom tuner: built out of tree and ran"
