#!/usr/bin/env bash
# Ctrl-C or SIGTERM while an actor evaluates the best trial on the test split: the
# driver stops with 130 and journals no `finished`, so `--resume` runs only the test (no job
# again) and best.json gets the test accuracy. The actor is held at the test
# (PACKTUNE_TEST_HOLD=actor.testing), so the signal comes at that point on any machine.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

tiny_config "$work/config.json"
PACKTUNE_TEST_HOLD="actor.testing:$work/held" "$packtune" run "$work/config.json" --out "$work/run" --quiet \
  > "$work/run.out" 2>&1 &
driver=$!
pids+=("$driver")
wait_held "$work/held" "$driver" || { cat "$work/run.out"; exit 1; }
kill -TERM "$driver"
wait_for "$driver"
[ "$code" -eq 130 ] || { echo "FAIL: exit $code after SIGTERM during the test, expected 130"; cat "$work/run.out"; exit 1; }
grep -q "only the test remains" "$work/run.out" || { echo "FAIL: the stop does not say the test remains"; cat "$work/run.out"; exit 1; }
grep -q '"finished"' "$work/run/journal.jsonl" && { echo "FAIL: the journal says finished"; exit 1; }
grep -q "^finished" "$work/run.out" && { echo "FAIL: the driver said finished"; cat "$work/run.out"; exit 1; }
cp "$work/run/results.jsonl" "$work/results.before"

"$packtune" run --resume "$work/run" > "$work/resumed.out" 2>&1 || {
  echo "FAIL: the resume failed"; cat "$work/resumed.out"; exit 1; }
grep -q "0 job(s) go back to the queue" "$work/resumed.out" || { echo "FAIL: the resume ran jobs again"; cat "$work/resumed.out"; exit 1; }
cmp "$work/results.before" "$work/run/results.jsonl" || { echo "FAIL: the resume wrote reports"; exit 1; }
grep -q '"finished"' "$work/run/journal.jsonl" || { echo "FAIL: no finished in the journal after the resume"; exit 1; }
python3 - "$work/run/best.json" <<'PY'
import json, sys
best = json.load(open(sys.argv[1]))
test = best.get("test", {})
assert test.get("trial") == best["trial"] and 0 < test.get("test_accuracy", 0) <= 1, best
print(f"resumed: trial {best['trial']} test_accuracy {test['test_accuracy']:.4f}")
PY
"$packtune" run --resume "$work/run" > "$work/again.out"
grep -q "finished already" "$work/again.out"
echo "PASS"
