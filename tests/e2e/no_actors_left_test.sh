#!/usr/bin/env bash
# A driver whose local actors have all been given up waits join_timeout_seconds for
# a node or actor to join, then stops with exit 1 naming it, instead of waiting for ever with
# jobs in its queue. Its one actor holds at its first job (PACKTUNE_TEST_HOLD=actor.assigned)
# and is killed there; every restart fails (a stand-in packtune-actor that runs the real one
# only the first time), so the node gives the slot up. `timeout 300` bounds a regression.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

# The driver starts actors from its own folder (cli/actor_launch.hpp).
mkdir "$work/bin"
cp "$packtune" "$work/bin/packtune"
cat > "$work/bin/packtune-actor" <<SH
#!/bin/sh
mkdir "$work/started" 2> /dev/null && exec "$(dirname "$packtune")/packtune-actor" "\$@"
echo "this actor cannot start (a stand-in for a broken machine)"
exit 1
SH
chmod +x "$work/bin/packtune-actor"

tiny_config "$work/config.json" '{"join_timeout_seconds": 1}'
PACKTUNE_TEST_HOLD="actor.assigned:$work/held" timeout 300 "$work/bin/packtune" run "$work/config.json" \
  --out "$work/run" --quiet > "$work/run.out" 2> "$work/run.err" &
driver=$!
pids+=("$driver")
wait_held "$work/held" "$driver" || { cat "$work/run.out" "$work/run.err"; exit 1; }
kill -9 "$(cat "$work/held")"
wait_for "$driver"
echo "exit $code"; cat "$work/run.err"
[ "$code" -ne 124 ] || { echo "FAIL: the driver still waited after 300 s"; cat "$work/run.out"; exit 1; }
[ "$code" -eq 1 ] || { echo "FAIL: exit $code, expected 1"; cat "$work/run.out"; exit 1; }
grep "^packtune: error: " "$work/run.err" | grep -q "no actor is left to train on, and none joined within 1 s" || {
  echo "FAIL: the error does not say no actor is left"; exit 1; }
grep -q "giving it up" "$work/run.err" "$work/run.out" || { echo "FAIL: the slot was not given up"; exit 1; }
echo "PASS"
