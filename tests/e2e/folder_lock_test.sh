#!/usr/bin/env bash
# Nothing is written into a results folder before its lock is held: a driver started
# on a fresh --out whose lock another driver holds (here flock(1) on the folder, the lock the
# driver takes) is refused with exit 2, and leaves config.json as it was and no results.jsonl.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

tiny_config "$work/config.json"
mkdir "$work/run"
echo '{"written by": "the driver that holds the lock"}' > "$work/run/config.json"
cp "$work/run/config.json" "$work/config.before"
set +e
flock --nonblock "$work/run" "$packtune" run "$work/config.json" --out "$work/run" --quiet > "$work/second.out" 2>&1
code=$?
set -e
[ "$code" -eq 2 ] && grep -q "another packtune driver is running this experiment" "$work/second.out" || {
  echo "FAIL: the second driver was not refused (exit $code)"; cat "$work/second.out"; exit 1; }
cmp "$work/config.before" "$work/run/config.json" || { echo "FAIL: the refused driver rewrote config.json"; exit 1; }
[ ! -e "$work/run/results.jsonl" ] || { echo "FAIL: the refused driver created results.jsonl"; exit 1; }
[ "$(ls -A "$work/run")" = config.json ] || { echo "FAIL: the refused driver wrote:"; ls -A "$work/run"; exit 1; }
echo "PASS"
