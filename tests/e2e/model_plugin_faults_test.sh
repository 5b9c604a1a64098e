#!/usr/bin/env bash
# Model plugins that fail in ways a bad path or version does not: nothing hangs, nothing is
# left behind, and a plugin's fault costs its trials, never the run's other trials or actors.
#   model_plugin_faults_test.sh PACKTUNE BLOCKING.so FAULTY.so
# BLOCKING.so blocks forever in a static constructor: `packtune plan` and `run` describe it in
# a child under $PACKTUNE_MODEL_PLUGIN_TIMEOUT (set small here; nothing waits for it to pass
# but the blocked plugin) and end with one line naming it; the work folder of a packtune
# killed while describing it is swept by the next packtune. FAULTY.so's family "faulty" fails
# as its hyper-parameter "fault" says (tests/layers/plugins/faulty_model_plugin.cpp): each
# failure fails its trial, with the plugin's path and the reason, and the one actor trains the
# run's other trials on, never restarted.
set -uo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
# A copy of its own: its path, on the command line of what loads it, is this test's alone.
blocking="$work/blocking-$$.so"
cp "$2" "$blocking"
faulty="$(cd "$(dirname "$3")" && pwd)/$(basename "$3")"  # absolute, as messages name it
# The work folders go to a temporary folder of the test's own, to be looked at.
export TMPDIR="$work/tmp"
mkdir "$TMPDIR"
describing() { pgrep -f -- "--describe-model-plugin $blocking"; }
trap 'kill_matching "--describe-model-plugin $blocking"; cleanup_work' EXIT

tiny_config "$work/mlp.json"

# A packtune killed while it describes the plugin leaves its describe folder behind, and the
# describing child, which ends with it (it dies with its parent).
"$packtune" plan "$work/mlp.json" --model-plugin "$blocking" > "$work/killed.out" 2>&1 &
killed=$!
until [ -d "$TMPDIR/packtune-describe-$killed" ] && describing > /dev/null; do
  kill -0 "$killed" 2> /dev/null || fail "packtune plan ended before it described the plugin" "$work/killed.out"
  sleep 0.05
done
kill -TERM "$killed"
wait_for "$killed"
while describing > /dev/null; do sleep 0.05; done
[ -d "$TMPDIR/packtune-describe-$killed" ] || fail "the killed packtune's describe folder is not there to sweep"
echo "ok   killed: packtune plan killed while describing left $TMPDIR/packtune-describe-$killed"

# one_line_timeout NAME COMMAND...: COMMAND, with a blocking plugin and a timeout of 0.5 s,
# exits 1 with one stderr line naming the plugin; no describe folder and no describing
# process is left.
one_line_timeout() {
  local name="$1"
  shift
  PACKTUNE_MODEL_PLUGIN_TIMEOUT=0.5 "$@" > "$work/$name.out" 2> "$work/$name.err"
  local code=$?
  [ "$code" -eq 1 ] && [ "$(wc -l < "$work/$name.err")" -eq 1 ] &&
    grep -qF "model plugin $blocking: no description within 0.5 s (PACKTUNE_MODEL_PLUGIN_TIMEOUT)" "$work/$name.err" ||
    fail "$name with a blocking plugin: exit $code" "$work/$name.err"
  ! describing > /dev/null || fail "$name left the plugin's describing process behind: $(describing)"
  [ -z "$(find "$TMPDIR" -maxdepth 1 -name 'packtune-describe-*')" ] ||
    fail "$name left describe folders: $(ls "$TMPDIR")"
  echo "ok   $name: $(cat "$work/$name.err")"
}
one_line_timeout plan "$packtune" plan "$work/mlp.json" --model-plugin "$blocking"
one_line_timeout run "$packtune" run "$work/mlp.json" --model-plugin "$blocking" --out "$work/out-run"
[ ! -e "$work/out-run/results.jsonl" ] || fail "run with a blocking plugin wrote results"

# A timeout that is no number of seconds is bad input.
PACKTUNE_MODEL_PLUGIN_TIMEOUT=soon "$packtune" plan "$work/mlp.json" --model-plugin "$blocking" \
  > /dev/null 2> "$work/bad_timeout.err"
code=$?
[ "$code" -eq 2 ] && grep -qF 'PACKTUNE_MODEL_PLUGIN_TIMEOUT: expected a number of seconds > 0, got "soon"' \
  "$work/bad_timeout.err" || fail "a bad PACKTUNE_MODEL_PLUGIN_TIMEOUT: exit $code" "$work/bad_timeout.err"
echo "ok   bad_timeout: $(cat "$work/bad_timeout.err")"

# Every way a builder fails, one trial each, and a trial that works among them (the grid takes
# the values in order).
tiny_config "$work/faulty.json" '{"tuner": {"name": "grid"}, "budget": {"unit": "steps", "max": 4},
  "model": {"family": "faulty", "batch_size": 64, "optimizer": "adam"},
  "space": {"fault": {"type": "choice", "values": [1, 2, 0, 3, 4]}}}'
"$packtune" run "$work/faulty.json" --model-plugin "$faulty" --out "$work/out-faulty" > "$work/faulty.out" 2>&1 ||
  fail "the run with the faulty plugin" "$work/faulty.out"
for why in "its builder returned no model (a null pointer)" \
           "its builder threw something that is not a std::exception" \
           "its model's output for one example of shape [1, 1, 1, 28, 28] is [1, 1, 13], but the data needs [1, 1, 10]" \
           "its builder failed: the builder gave up"; do
  grep -qF "failed on actor 0: model plugin $faulty: model family \"faulty\": $why" "$work/faulty.out" ||
    fail "no trial failed with: $why" "$work/faulty.out"
done
grep -qF "5 jobs, 4 failed trials" "$work/faulty.out" || fail "not 4 of 5 trials failed" "$work/faulty.out"
grep -qF '"fault":0' "$work/out-faulty/results.jsonl" || fail "the working trial has no results" "$work/faulty.out"
# One actor process for the whole run: a crash would have had it restarted and join again.
joins=$(grep -c "joined from" "$work/out-faulty/driver.log")
[ "$joins" -eq 1 ] || fail "the actor joined $joins times" "$work/out-faulty/driver.log"
echo "ok   faulty: 4 trials failed naming the plugin and why, the working one trained, the actor lived on"
