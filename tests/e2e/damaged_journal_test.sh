#!/usr/bin/env bash
# Damage `--resume` meets: a journal that lost a line in the middle is refused with
# an error naming the journal and the line, not only the tuner's complaint; a damaged
# config.json is written again from the journal's header.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

tiny_config "$work/config.json" \
  '{"tuner": {"name": "sha", "trials": 4, "eta": 2}, "budget": {"unit": "epochs", "min": 0.25, "max": 0.5}, "evaluate_test": false}'
"$packtune" run "$work/config.json" --out "$work/run" --quiet > "$work/run.out" 2>&1 || { cat "$work/run.out"; exit 1; }

# config.json cut short: a resume of the finished run writes it again.
cp "$work/run/config.json" "$work/config.before"
head -c 20 "$work/config.before" > "$work/run/config.json"
"$packtune" run --resume "$work/run" > "$work/again.out" 2>&1
grep -q "finished already" "$work/again.out"
cmp "$work/config.before" "$work/run/config.json" || { echo "FAIL: config.json was not written again"; exit 1; }

# The last job entry is lost, and with it the end: its trial's reports and result come to a
# tuner that never gave that job.
line=$(python3 - "$work/run/journal.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
jobs = [i for i, l in enumerate(lines) if "job" in json.loads(l)]
print(jobs[-1] + 1)
PY
)
grep -v '"finished"' "$work/run/journal.jsonl" | sed "${line}d" > "$work/journal.damaged"
cp "$work/journal.damaged" "$work/run/journal.jsonl"
set +e
"$packtune" run --resume "$work/run" > "$work/damaged.out" 2> "$work/damaged.err"
code=$?
set -e
echo "exit $code: $(cat "$work/damaged.err")"
[ "$code" -eq 2 ] || { echo "FAIL: exit $code, expected 2"; cat "$work/damaged.out"; exit 1; }
grep "^packtune: error: " "$work/damaged.err" | grep -q "$work/run/journal.jsonl: line [0-9]*: " || {
  echo "FAIL: the error does not name the journal and its line"; exit 1; }
echo "PASS"
