#!/usr/bin/env bash
# Every bad input gets one line on stderr naming the problem, exit code 2, and nothing in --out.
set -uo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
failures=0
passed=0

good='{"budget": {"max": 1}, "tuner": {"name": "random", "trials": 1}, "actors": 1,
       "data": {"train_size": 200, "validation_size": 50},
       "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.1}}}'

# expect NAME EXPECTED_TEXT CONFIG_JSON [extra args...]
expect() {
  local name="$1" text="$2" config="$3"
  shift 3
  local cfg="$work/$name.json" out="$work/out-$name"
  if [ "$config" != "-" ]; then printf '%s' "$config" > "$cfg"; fi
  "$packtune" run "$cfg" --out "$out" "$@" > "$work/stdout" 2> "$work/stderr"
  local code=$?
  local lines
  lines=$(wc -l < "$work/stderr")
  if [ "$code" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$text" "$work/stderr" || [ -e "$out" ]; then
    echo "FAIL $name: exit $code, $lines stderr line(s), out exists: $([ -e "$out" ] && echo yes || echo no)"
    sed 's/^/    /' "$work/stderr"
    failures=$((failures + 1))
  else
    echo "ok   $name: $(cat "$work/stderr")"
    passed=$((passed + 1))
  fi
}

set_key() {  # set_key JSON PYTHON_EXPR -> JSON with the change applied
  "$py" -c "import json,sys; c=json.loads(sys.argv[1]); $2; print(json.dumps(c))" "$1"
}

expect unknown_key "learning_rate: unknown key" "$(set_key "$good" 'c["learning_rate"]=0.1')"
expect wrong_type "actors: expected an integer" "$(set_key "$good" 'c["actors"]="two"')"
expect keep_checkpoints "keep_checkpoints: unknown value \"some\"" "$(set_key "$good" 'c["keep_checkpoints"]="some"')"
expect keep_checkpoints_flag "--keep-checkpoints: unknown value" "$good" --keep-checkpoints none
expect empty_range "space.lr: empty range" "$(set_key "$good" 'c["space"]["lr"]["high"]=0.0001')"
expect not_json "not valid JSON" '{"tuner": '
expect missing_config "config file not found" - 
expect missing_data "data file not found: there is no folder /nonexistent; install dataset-fashion-mnist" \
  "$(set_key "$good" 'c["data"]["dir"]="/nonexistent"')"
expect unknown_model "model.family" "$(set_key "$good" 'c["model"]={"family": "transformer"}')"
expect unknown_tuner "unknown tuner \"bayes\"" "$(set_key "$good" 'c["tuner"]["name"]="bayes"')"
expect unknown_tuner_flag "unknown tuner \"nope\"" "$good" --tuner nope
expect pbt_perturbs_dropout_to_zero "tuner.perturb: dropout can be perturbed only where the space keeps it above 0" \
  "$(set_key "$good" 'c["tuner"]={"name": "pbt", "population": 4, "perturb": ["dropout"]}; c["space"]["dropout"]={"type": "uniform", "low": 0.0, "high": 0.3}')"
expect pbt_perturbs_width "tuner.perturb: width changes what a checkpoint holds" \
  "$(set_key "$good" 'c["tuner"]={"name": "pbt", "population": 4, "perturb": ["width"]}; c["space"]["width"]={"type": "choice", "values": [32, 64]}')"
expect bad_device "device" "$good" --device tpu
expect bad_trials "--trials" "$good" --trials 0
expect unknown_flag "unrecognised option" "$good" --frobnicate
expect other_tuners_settings "written for hyperband; with --tuner random remove or change them" \
  "$(set_key "$good" 'c["tuner"]={"name": "hyperband", "eta": 3}')" --tuner random
expect negative_seed "--seed: expected an integer from 0" "$good" --seed -1
expect no_whole_batch "100 training examples make no whole batch of 128" "$(set_key "$good" 'c["data"]["train_size"]=100')"
expect no_whole_batch_space "make no whole batch of 512" \
  "$(set_key "$good" 'c["space"]["batch_size"]={"type": "choice", "values": [64, 512]}')"
expect cnn_key_for_mlp "space.channels: a cnn hyper-parameter, but model.family is mlp" \
  "$(set_key "$good" 'c["space"]["channels"]={"type": "choice", "values": [8, 16]}')"
expect too_many_images "100000 is more than the 59950 training examples" "$(set_key "$good" 'c["data"]["train_size"]=100000')"
expect actor_timeout "would retire healthy actors" "$(set_key "$good" 'c["heartbeat_seconds"]=5; c["actor_timeout_seconds"]=1')"
expect array_config "the config: expected an object, got array" '[1, 2]'
# Found by the driver after the folder was made: it is removed again.
expect bad_listen "listen: cannot bind bogus" "$(set_key "$good" 'c["listen"]="bogus"')"
expect open_listen "can be reached from other machines" "$(set_key "$good" 'c["listen"]="tcp://0.0.0.0:0"')"
mkdir -p "$work/folder_config.json"
expect folder_config "a folder, not a config file" -
# Values that cannot work.
expect inproc_listen "listen: inproc://driver is inside the driver's process" "$(set_key "$good" 'c["listen"]="inproc://driver"')"
expect inproc_listen_flag "--listen: inproc://x" "$good" --listen inproc://x
expect heartbeat_too_short "heartbeat_seconds: 0.01 is out of range; expected a number >= 0.1" \
  "$(set_key "$good" 'c["heartbeat_seconds"]=0.01')"
expect memory_scale_too_large "memory_estimate_scale: 1e+300 is out of range" \
  "$(set_key "$good" 'c["memory_estimate_scale"]=1e300')"
expect timeout_too_long "join_timeout_seconds: 1e+300 is out of range" "$(set_key "$good" 'c["join_timeout_seconds"]=1e300')"
expect report_below_a_step "budget.report_every: 0.5 steps cannot be honoured" \
  "$(set_key "$good" 'c["budget"]={"unit": "steps", "max": 10, "report_every": 0.5}')"
expect report_below_a_step_epochs "budget.report_every: 0.001 epochs is less than a step" \
  "$(set_key "$good" 'c["budget"]={"max": 1, "report_every": 0.001}')"
expect reports_without_end "asks more than 100000 reports" "$(set_key "$good" 'c["budget"]={"unit": "steps", "max": 1e12, "report_every": 1}')"
expect steps_beyond_a_count "budget.max: 1e+20 is out of range" "$(set_key "$good" 'c["budget"]={"unit": "steps", "max": 1e20}')"
expect epochs_beyond_a_count "steps a trial can count" \
  "$(set_key "$good" 'c["budget"]={"max": 1e15}; c["data"]["train_size"]=10000')"
# Budget settings below a step, or a sliver of budget.max, made schedules that never ended
# (pbt's interval 1e-300: plan passed, run and simulate hung).
tiny_interval="$(set_key "$good" 'c["budget"]={"unit": "steps", "max": 10}; c["tuner"]={"name": "pbt", "population": 2, "interval": 1e-300, "perturb": ["lr"]}')"
expect pbt_interval_below_a_step "tuner.interval: 1e-300 steps is less than a step" "$tiny_interval"
expect budget_min_below_a_step "budget.min: 0.5 steps is less than a step" \
  "$(set_key "$good" 'c["budget"]={"unit": "steps", "min": 0.5, "max": 10}')"
expect key_twice "budget.max: given twice" '{"budget": {"max": 1, "max": 2}}'
expect key_twice_top "actors: given twice" '{"actors": 1, "tuner": "random", "actors": 2}'

# An ipc endpoint binds by deleting what is at its path: a file there is refused and kept, and
# so is the socket of a process that listens on it (another driver's).
echo "precious" > "$work/regular.txt"
expect ipc_over_a_file "regular.txt exists and is not a socket" "$(set_key "$good" "c['listen']='ipc://$work/regular.txt'")"
grep -qx precious "$work/regular.txt" || { echo "FAIL ipc_over_a_file: the file is gone or changed"; failures=$((failures + 1)); }
"$py" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(8)
open(sys.argv[2], "w").write("listening")
while True: time.sleep(60)
' "$work/live.sock" "$work/live.up" &
pids+=($!)
until [ -s "$work/live.up" ]; do
  kill -0 "${pids[-1]}" 2> /dev/null || { echo "FAIL: the listening socket's process ended"; exit 1; }
  sleep 0.05
done
expect ipc_over_a_live_socket "live.sock is the socket of a running process" \
  "$(set_key "$good" "c['listen']='ipc://$work/live.sock'")"
[ -S "$work/live.sock" ] || { echo "FAIL ipc_over_a_live_socket: the socket was deleted"; failures=$((failures + 1)); }

# The name is a folder's under runs/: no path. Run without --out from a folder of its own;
# nothing may appear in it (runs/) nor next to it (where ../ would lead).
packtune_path="$(readlink -f "$packtune")"  # from another folder
expect_nothing_written() {  # expect_nothing_written NAME EXPECTED_TEXT CONFIG_JSON
  local name="$1" text="$2" cwd="$work/cwd-$1"
  mkdir -p "$cwd"
  printf '%s' "$3" > "$work/$name.json"
  local before after code lines
  before=$(ls -A "$work")
  (cd "$cwd" && "$packtune_path" run "$work/$name.json" > "$work/stdout" 2> "$work/stderr")
  code=$?
  after=$(ls -A "$work")
  lines=$(wc -l < "$work/stderr")
  if [ "$code" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$text" "$work/stderr" || [ -n "$(ls -A "$cwd")" ] ||
     [ "$before" != "$after" ]; then
    echo "FAIL $name: exit $code, $lines stderr line(s), in $cwd: $(ls -A "$cwd"), new beside it: $(comm -13 <(echo "$before") <(echo "$after"))"
    sed 's/^/    /' "$work/stderr"
    failures=$((failures + 1))
  else
    echo "ok   $name: $(cat "$work/stderr")"
    passed=$((passed + 1))
  fi
}
expect_nothing_written name_climbs 'name: "../../escaped" is not a plain name' "$(set_key "$good" 'c["name"]="../../escaped"')"
expect_nothing_written name_nests 'name: "a/b" is not a plain name' "$(set_key "$good" 'c["name"]="a/b"')"
expect_nothing_written name_dot_dot 'name: ".." is not a plain name' "$(set_key "$good" 'c["name"]=".."')"

# An --out that holds what a run writes is refused, and what it held stays as it was: an
# earlier run's journal without its results.jsonl, and a config kept inside --out.
occupied() {  # occupied NAME EXPECTED_TEXT FILE_IN_OUT (the config run is DIR/config.json)
  local name="$1" text="$2" dir="$work/occupied-$1"
  mkdir -p "$dir"
  printf '%s' "$good" > "$dir/config.json"
  [ "$3" = config.json ] || printf '{"packtune_journal": 1}\n' > "$dir/$3"
  local before
  before=$(cd "$dir" && md5sum * | sort)
  "$packtune" run "$dir/config.json" --out "$dir" --quiet > /dev/null 2> "$work/stderr"
  local code=$?
  if [ $code -eq 2 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -qF -- "$text" "$work/stderr" &&
     [ "$before" = "$(cd "$dir" && md5sum * | sort)" ]; then
    echo "ok   $name: $(cat "$work/stderr")"; passed=$((passed + 1))
  else
    echo "FAIL $name: exit $code, in --out: $(ls -A "$dir")"; cat "$work/stderr"; failures=$((failures + 1))
  fi
}
occupied out_with_journal "already holds an earlier run (journal.jsonl)" journal.jsonl
occupied out_with_config "already holds config.json, which a run writes" config.json

# A missing CONFIG argument and an unknown command are usage errors too.
"$packtune" run > /dev/null 2> "$work/stderr"; code=$?
if [ $code -eq 2 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ]; then passed=$((passed + 1)); else
  echo "FAIL run without CONFIG: exit $code"; failures=$((failures + 1)); fi
"$packtune" frobnicate > /dev/null 2> "$work/stderr"; code=$?
if [ $code -eq 2 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -q 'error: unknown command "frobnicate"' "$work/stderr"; then
  passed=$((passed + 1)); else
  echo "FAIL unknown command: exit $code, $(wc -l < "$work/stderr") lines"; failures=$((failures + 1)); fi

# Other commands' bad input: one line, exit 2.
other() {  # other NAME EXPECTED_TEXT COMMAND...
  local name="$1" text="$2"
  shift 2
  "$@" > /dev/null 2> "$work/stderr"
  local code=$?
  if [ $code -eq 2 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -qF -- "$text" "$work/stderr"; then
    echo "ok   $name: $(cat "$work/stderr")"; passed=$((passed + 1))
  else
    echo "FAIL $name: exit $code"; cat "$work/stderr"; failures=$((failures + 1))
  fi
}
other node_bad_endpoint "--driver bogus://x: Protocol not supported" "$packtune" node --driver bogus://x
# Folders in odd states.
printf '%s' "$good" > "$work/odd.json"
other empty_out "run: --out is empty; give a folder" "$packtune" run "$work/odd.json" --out ""
ln -s "$work/nowhere" "$work/dangling"
other dangling_out "--out $work/dangling: is a link to nothing ($work/nowhere)" "$packtune" run "$work/odd.json" --out "$work/dangling"
other resume_no_folder "--resume $work/none: no such folder" "$packtune" run --resume "$work/none"
mkdir -p "$work/a-folder"
other inspect_folder "checkpoint $work/a-folder: is a folder" "$packtune" inspect "$work/a-folder"
printf '%s' "$tiny_interval" > "$work/tiny_interval.json"
other pbt_interval_plan "tuner.interval: 1e-300 steps is less than a step" "$packtune" plan "$work/tiny_interval.json"
other pbt_interval_simulate "tuner.interval: 1e-300 steps is less than a step" \
  "$packtune" simulate "$work/tiny_interval.json" --objective synthetic
other pbt_interval_simulate_epochs "tuner.interval: 1e-300 divides budget.max 10 into more than 100000 parts" \
  "$packtune" simulate --objective synthetic --tuner pbt --max-budget 10 --tuner-setting interval=1e-300 \
  --tuner-setting 'perturb=["lr"]' --trials 2
other report_every_simulate "--report-every: 1e-300 divides budget.max 10 into more than 100000 parts" \
  "$packtune" simulate --objective synthetic --tuner random --max-budget 10 --trials 1 --report-every 1e-300
# A GPU that nvidia-smi does not list (a stand-in nvidia-smi with GPUs 0 and 1).
mkdir -p "$work/bin"
printf '#!/bin/sh\necho "0, GPU-a, Stand-in, 1024"\necho "1, GPU-b, Stand-in, 1024"\n' > "$work/bin/nvidia-smi"
chmod +x "$work/bin/nvidia-smi"
other node_unknown_gpu "--gpus: GPU 5 is not one nvidia-smi lists here (0, 1)" \
  env PATH="$work/bin:$PATH" "$packtune" node --driver "ipc://$work/none.ipc" --gpus 5
mkdir -p "$work/keys" && echo "kept" > "$work/keys/actor.pub"
other keys_over_a_key "actor.pub exists" "$packtune" keys "$work/keys"
grep -q kept "$work/keys/actor.pub" || { echo "FAIL keys_over_a_key: actor.pub was overwritten"; failures=$((failures + 1)); }
mkdir -p "$work/busy" && echo "mine" > "$work/busy/notes.txt" && chmod 755 "$work/busy"
other keys_into_a_busy_folder "is not empty; name a new or empty folder" "$packtune" keys "$work/busy"
[ "$(ls -A "$work/busy")" = notes.txt ] && [ "$(stat -c %a "$work/busy")" = 755 ] ||
  { echo "FAIL keys_into_a_busy_folder: the folder changed"; failures=$((failures + 1)); }
# A secret key others can read is refused where it is loaded, as ssh refuses it.
"$packtune" keys "$work/open-keys" > /dev/null
[ "$(stat -c %a "$work/open-keys")" = 700 ] && [ "$(stat -c %a "$work/open-keys/driver.pub")" = 600 ] ||
  { echo "FAIL keys: the folder is not 700 or a file not 600"; failures=$((failures + 1)); }
chmod 644 "$work/open-keys/driver.key"
expect key_readable_by_others "run chmod 600 $work/open-keys/driver.key" \
  "$(set_key "$good" "c['keys']='$work/open-keys'; c['listen']='tcp'")"
other actor_key_readable_by_others "actor.key: its permissions 0664" \
  bash -c 'chmod 664 "$1/actor.key" && exec "$2" actor --driver "ipc://$1/none.ipc" --keys "$1"' _ "$work/open-keys" "$packtune"

# A keys folder others can write into: they could rename their own key over driver.pub or
# authorized_actors. Refused by `packtune keys` (nothing written) and where keys are loaded.
mkdir -p "$work/open-folder" && chmod 777 "$work/open-folder"
other keys_into_an_open_folder "its permissions 0777 let other users write into it" "$packtune" keys "$work/open-folder"
[ -z "$(ls -A "$work/open-folder")" ] || { echo "FAIL keys_into_an_open_folder: keys were written"; failures=$((failures + 1)); }
"$packtune" keys "$work/shared-keys" > /dev/null && chmod 775 "$work/shared-keys"
expect keys_folder_others_write "$work/shared-keys: its permissions 0775 let other users write into it" \
  "$(set_key "$good" "c['keys']='$work/shared-keys'; c['listen']='tcp'")"

# A model plugin path that is there but no library: a device, a folder (and a FIFO, which
# would block a reader) say so rather than "no such file".
expect model_plugin_device "model plugin /dev/zero: not a regular file (a character device)" "$good" --model-plugin /dev/zero
expect model_plugin_folder "model plugin $work/open-folder: not a regular file (a folder)" "$good" --model-plugin "$work/open-folder"
mkfifo "$work/plugin.fifo"
expect model_plugin_fifo "model plugin $work/plugin.fifo: not a regular file (a FIFO)" "$good" --model-plugin "$work/plugin.fifo"

expect precision_word "precision: unknown precision \"fp16\"" "$(set_key "$good" 'c["precision"]="fp16"')"
expect precision_flag "--precision: unknown precision \"half\"" "$good" --precision half
expect precision_bf16_cpu "precision bf16 is for GPUs" "$(set_key "$good" 'c["precision"]="bf16"')"
expect precision_bf16_cpu_flag "precision bf16 is for GPUs" "$good" --precision bf16
expect deterministic_mixed_always "mixed_packs \"always\" contradicts it" \
  "$(set_key "$good" 'c["deterministic"]=True; c["mixed_packs"]="always"')"

# Bad input only an actor can see (no GPU here): its one line, exit 2, and no restarts (each
# would fail the same way). No report came, so the run leaves --out as it found it (absent,
# and so are the parents it made): the same command with the device fixed can run there.
if ! nvidia-smi -L > /dev/null 2>&1; then
  printf '%s' "$good" > "$work/no-gpu.json"
  "$packtune" run "$work/no-gpu.json" --out "$work/no-gpu/a/b" --device cuda --quiet > "$work/stdout" 2> "$work/stderr"
  code=$?
  if [ $code -eq 2 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -q 'device: "cuda" requested' "$work/stderr" &&
     ! grep -q "restarting" "$work/stdout" && [ ! -e "$work/no-gpu" ]; then
    echo "ok   no_gpu: $(cat "$work/stderr")"; passed=$((passed + 1))
  else
    echo "FAIL no_gpu: exit $code$([ -e "$work/no-gpu" ] && echo ", --out left: $(find "$work/no-gpu")")"
    cat "$work/stderr" "$work/stdout"; failures=$((failures + 1))
  fi
fi

# bf16 with "device": "auto" passes the driver's check; an actor that finds no GPU refuses it.
if ! nvidia-smi -L > /dev/null 2>&1; then
  printf '%s' "$(set_key "$good" 'c["precision"]="bf16"; c["device"]="auto"')" > "$work/bf16-auto.json"
  "$packtune" run "$work/bf16-auto.json" --out "$work/bf16-auto" --quiet > "$work/stdout" 2> "$work/stderr"
  code=$?
  if [ $code -eq 2 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -q 'precision bf16 is for GPUs, and the device is cpu' "$work/stderr" &&
     ! grep -q "restarting" "$work/stdout"; then
    echo "ok   bf16_on_cpu_actor: $(cat "$work/stderr")"; passed=$((passed + 1))
  else
    echo "FAIL bf16_on_cpu_actor: exit $code"; cat "$work/stderr" "$work/stdout"; failures=$((failures + 1))
  fi
fi

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
