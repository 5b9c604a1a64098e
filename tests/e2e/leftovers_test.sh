#!/usr/bin/env bash
# What a driver leaves in $TMPDIR: its ipc socket (packtune-PID-N.ipc) and its
# actors' work folder (packtune-driver-PID) go on every exit it survives, a SIGTERM included,
# and the next driver on the machine removes those of a driver killed with -9. The drivers'
# one actor holds at its first job (PACKTUNE_TEST_HOLD=actor.assigned), so both signals come
# while the run goes on. The drivers get a temporary folder of their own: every driver sweeps
# its temporary folder at start, and one of another test running beside this one would remove
# what this test looks for.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
export TMPDIR="$work/tmp"
mkdir "$TMPDIR"
tmp="$TMPDIR"

tiny_config "$work/config.json"
leftovers() {  # $1: a driver's pid
  ls -d "$tmp"/packtune-"$1"-*.ipc "$tmp/packtune-driver-$1" 2> /dev/null || true
}
held_driver() {  # $1: name; sets $driver
  PACKTUNE_TEST_HOLD="actor.assigned:$work/$1.held" "$packtune" run "$work/config.json" --out "$work/$1" --quiet \
    > "$work/$1.out" 2>&1 &
  driver=$!
  pids+=("$driver")
  wait_held "$work/$1.held" "$driver" || { cat "$work/$1.out"; exit 1; }
  [ -n "$(leftovers "$driver")" ] || { echo "FAIL: driver $driver has no ipc socket or work folder to check"; exit 1; }
}

held_driver term
kill -TERM "$driver"
wait_for "$driver"
[ "$code" -eq 130 ] || { echo "FAIL: exit $code after SIGTERM, expected 130"; cat "$work/term.out"; exit 1; }
[ -z "$(leftovers "$driver")" ] || { echo "FAIL: a stopped driver left:"; leftovers "$driver"; exit 1; }

held_driver killed
killed=$driver
kill -9 "$killed"
wait "$killed" 2> /dev/null || true
echo "left by the killed driver $killed:"; leftovers "$killed"
[ -n "$(leftovers "$killed")" ]
tiny_config "$work/next.json" '{"evaluate_test": false}'
"$packtune" run "$work/next.json" --out "$work/next" > "$work/next.out" 2>&1 || { cat "$work/next.out"; exit 1; }
[ -z "$(leftovers "$killed")" ] || { echo "FAIL: the next driver did not remove:"; leftovers "$killed"; exit 1; }
grep -q "left by driver $killed, which is gone" "$work/next.out" || { echo "FAIL: the next driver did not say so"; cat "$work/next.out"; exit 1; }
echo "PASS"
