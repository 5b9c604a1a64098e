#!/usr/bin/env bash
# Installs packtune's tuner and layer libraries into a temporary prefix, builds
# examples/model_plugin out of tree against it with find_package(packtune), and runs the
# example's config from a copy of the example's folder, as its README says: a vgg family from
# a plugin trains end to end, the config as run records the plugin (absolute), and --resume
# from another folder finds it.
#   model_plugin_example_test.sh PACKTUNE CMAKE BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
cmake=$2 build=$3 source=$4

for component in tuners layers; do
  "$cmake" --install "$build" --prefix "$work/prefix" --component "$component" > /dev/null
done
test -f "$work/prefix/include/packtune/layers/model_plugin.hpp" || fail "layers/model_plugin.hpp not installed"

cp -r "$source/examples/model_plugin" "$work/example"
rm -rf "$work/example/build"
"$cmake" -S "$work/example" -B "$work/example/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/configure.out" 2>&1 || fail "configuring the example" "$work/configure.out"
"$cmake" --build "$work/example/build" -j2 > "$work/build.out" 2>&1 || fail "building the example" "$work/build.out"
plugin="$work/example/build/libvgg_model_plugin.so"
test -f "$plugin" || fail "no $plugin"

(cd "$work/example" && "$packtune" run vgg_fashion_mnist.json --out "$work/run" --quiet > "$work/run.out" 2>&1) ||
  fail "packtune run vgg_fashion_mnist.json" "$work/run.out"
grep -q "\"model_plugin\": \"$plugin\"" "$work/run/config.json" || fail "config.json lacks the plugin" "$work/run/config.json"
"$py" - "$work/run" <<'PY' || fail "the run's results" "$work/run.out"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
assert {r["trial"] for r in rows} == {0, 1, 2, 3}, rows
for r in rows:
    assert r["config"]["family"] == "vgg" and r["config"]["channels"] in (8, 16), r
    assert 0.0 <= r["val_accuracy"] <= 1.0 and r["val_loss"] > 0, r
best = json.load(open(sys.argv[1] + "/best.json"))
assert best["config"]["family"] == "vgg", best
# 10 classes: a model that learned nothing scores about 0.1.
assert best["value"] > 0.2, best
PY
(cd / && "$packtune" run --resume "$work/run" > "$work/resume.out" 2>&1) || fail "--resume" "$work/resume.out"
grep -q "finished already" "$work/resume.out" || fail "--resume did not find the run finished" "$work/resume.out"
echo "model plugin example: built out of tree, ran, resumed"
