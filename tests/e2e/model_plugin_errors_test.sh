#!/usr/bin/env bash
# A bad model plugin, or a config a plugin's family refuses, is one line on stderr naming the
# problem, exit 2, and nothing in --out, from `packtune run` and `packtune plan` alike: the
# driver learns the plugin's families from `packtune-actor --describe-model-plugin` before any
# actor starts.
#   model_plugin_errors_test.sh PACKTUNE UNVERSIONED.so STALE.so VGG.so
set -uo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
unversioned="$2" stale="$3" vgg="$4"

config() {  # config NAME MODEL_JSON [SPACE_JSON]: a small vgg run's config
  local space="${3:-}"
  [ -n "$space" ] || space='{}'
  tiny_config "$work/$1.json" "{\"model\": $2, \"space\": $space, \"budget\": {\"unit\": \"steps\", \"max\": 4}}"
}
config good '{"family": "vgg", "blocks": 1, "channels": 4, "batch_size": 32}'
config undeclared '{"family": "vgg", "width": 64}'
config out_of_range '{"family": "vgg"}' '{"blocks": {"type": "choice", "values": [1, 4]}}'
config wrong_type '{"family": "vgg", "dropout": "high"}'
config no_family '{"family": "vgg_nonexistent"}'

one_line_error unversioned "exports no packtune_model_plugin_version" \
  "$packtune" run "$work/good.json" --model-plugin "$unversioned" --out "$work/out-unversioned"
one_line_error stale "built against model plugin interface version 0, this packtune takes version" \
  "$packtune" run "$work/good.json" --model-plugin "$stale" --out "$work/out-stale"
one_line_error missing "model plugin $work/none.so: no such file" \
  "$packtune" run "$work/good.json" --model-plugin "$work/none.so" --out "$work/out-missing"
one_line_error not_a_library "cannot be loaded" \
  "$packtune" run "$work/good.json" --model-plugin "$work/good.json" --out "$work/out-not_a_library"
one_line_error undeclared "model.width: not a hyper-parameter of model family vgg" \
  "$packtune" run "$work/undeclared.json" --model-plugin "$vgg" --out "$work/out-undeclared"
one_line_error out_of_range "space.blocks: 4 is out of range; expected 1 to 3" \
  "$packtune" run "$work/out_of_range.json" --model-plugin "$vgg" --out "$work/out-out_of_range"
one_line_error wrong_type "model.dropout: expected a number" \
  "$packtune" run "$work/wrong_type.json" --model-plugin "$vgg" --out "$work/out-wrong_type"
one_line_error no_family "model.family: \"vgg_nonexistent\" is not allowed; expected one of mlp, cnn, resnet, torchscript, vgg" \
  "$packtune" run "$work/no_family.json" --model-plugin "$vgg" --out "$work/out-no_family"
one_line_error two_plugins "--model-plugin: one library per run" \
  "$packtune" run "$work/good.json" --model-plugin "$vgg" --model-plugin "$vgg" --out "$work/out-two_plugins"
one_line_error plan_stale "rebuild it against this packtune" \
  "$packtune" plan "$work/good.json" --model-plugin "$stale"
one_line_error plan_undeclared "model.width: not a hyper-parameter of model family vgg" \
  "$packtune" plan "$work/undeclared.json" --model-plugin "$vgg"
# Without the plugin the family is unknown.
one_line_error without_plugin "model.family: \"vgg\" is not allowed" \
  "$packtune" run "$work/good.json" --out "$work/out-without_plugin"

# The good config plans with the plugin: each vgg trial alone until an actor measured it.
"$packtune" plan "$work/good.json" --model-plugin "$vgg" > "$work/plan.out" 2>&1 ||
  fail "packtune plan with the vgg plugin" "$work/plan.out"

[ "$failures" -eq 0 ] || { echo "$failures failed"; exit 1; }
echo "every bad model plugin and config was one line and exit 2"
