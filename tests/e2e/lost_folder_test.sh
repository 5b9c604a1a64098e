#!/usr/bin/env bash
# The results folder deleted, or moved away and replaced by another, while the run goes on:
# the driver stops with one error line naming it and exit 1, never "finished",
# and writes nothing into the replacement. The one actor holds at its first job
# (PACKTUNE_TEST_HOLD=actor.assigned), so the run cannot end before the folder goes.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

tiny_config "$work/config.json"
for how in deleted replaced; do
  PACKTUNE_TEST_HOLD="actor.assigned:$work/$how.held" "$packtune" run "$work/config.json" --out "$work/$how" \
    --quiet > "$work/$how.out" 2> "$work/$how.err" &
  driver=$!
  pids+=("$driver")
  wait_held "$work/$how.held" "$driver" || { cat "$work/$how.out" "$work/$how.err"; exit 1; }
  if [ "$how" = deleted ]; then
    # rm -rf unlinks the files, then the folder: a live report written in between makes the
    # folder non-empty again, and the driver, which stops writing once it notices, may notice
    # a deleted journal.jsonl or results.jsonl before the folder is gone.
    for _ in $(seq 100); do rm -rf "$work/$how" 2> /dev/null && break; done
    [ ! -e "$work/$how" ]
  else
    mv "$work/$how" "$work/$how.old"
    mkdir "$work/$how"
  fi
  wait_for "$driver"
  echo "folder $how: exit $code"; cat "$work/$how.err"
  [ "$code" -eq 1 ] || { echo "FAIL: exit $code, expected 1"; cat "$work/$how.out"; exit 1; }
  [ "$(grep -c "^packtune: error: " "$work/$how.err")" -eq 1 ] &&
    grep "^packtune: error: " "$work/$how.err" > "$work/$how.line" &&
    grep -qE "$work/$how( was deleted or replaced|/(journal|results)\.jsonl was deleted)" "$work/$how.line" || {
    echo "FAIL: not one error line naming the folder"; exit 1; }
  if grep -q "finished" "$work/$how.out"; then echo "FAIL: the driver said finished"; cat "$work/$how.out"; exit 1; fi
  if [ "$how" = replaced ] && [ -n "$(ls -A "$work/$how")" ]; then
    echo "FAIL: the driver wrote into the replacement folder:"; ls -A "$work/$how"; exit 1
  fi
done
echo "PASS"
