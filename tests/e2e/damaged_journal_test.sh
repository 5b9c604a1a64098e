#!/usr/bin/env bash
# Damage `--resume` meets: a journal that lost a line in the middle, or had one edited, is
# refused with an error naming the journal and the line (each line's place and checksum); an
# older packtune's journal, which has neither, is refused by its replay, naming the line where
# the tuner's answer differs; a damaged config.json or results.jsonl is written again from the
# journal.
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

# results.jsonl damaged, then deleted: the same resume writes it again from the journal's rows.
cp "$work/run/results.jsonl" "$work/results.before"
sed -i '2s/^{/{{/' "$work/run/results.jsonl"
"$packtune" run --resume "$work/run" > "$work/again.out" 2>&1
cmp "$work/results.before" "$work/run/results.jsonl" || { echo "FAIL: results.jsonl was not written again"; exit 1; }
grep -q "results.jsonl was damaged or missing; written again from the journal" "$work/again.out"
rm "$work/run/results.jsonl"
"$packtune" run --resume "$work/run" > "$work/again.out" 2>&1
cmp "$work/results.before" "$work/run/results.jsonl" || { echo "FAIL: a deleted results.jsonl was not written again"; exit 1; }
"$packtune" run --resume "$work/run" > "$work/again.out" 2>&1
if grep -q "written again" "$work/again.out"; then echo "FAIL: an intact results.jsonl was written again"; exit 1; fi
# Its last newline lost: the last row is torn to every reader, though it parses.
truncate -s -1 "$work/run/results.jsonl"
"$packtune" run --resume "$work/run" > "$work/again.out" 2>&1
cmp "$work/results.before" "$work/run/results.jsonl" || { echo "FAIL: a torn last row was not written again"; exit 1; }
# A link to another file in its place: replaced by a file of the run's own, the other left alone.
printf 'not ours\n' > "$work/other.jsonl"
rm "$work/run/results.jsonl"
ln -s "$work/other.jsonl" "$work/run/results.jsonl"
"$packtune" run --resume "$work/run" > "$work/again.out" 2>&1
[ ! -L "$work/run/results.jsonl" ] && cmp "$work/results.before" "$work/run/results.jsonl" &&
  [ "$(cat "$work/other.jsonl")" = "not ours" ] || { echo "FAIL: results.jsonl as a link"; exit 1; }

# Refused with exit 2 and one error line that holds $2 (a regular expression).
refused() {
  set +e
  "$packtune" run --resume "$work/run" > "$work/$1.out" 2> "$work/$1.err"
  local code=$?
  set -e
  echo "$1: exit $code: $(cat "$work/$1.err")"
  [ "$code" -eq 2 ] || { echo "FAIL $1: exit $code, expected 2"; cat "$work/$1.out"; exit 1; }
  grep "^packtune: error: " "$work/$1.err" | grep -q "$work/run/journal.jsonl: line [0-9]*$2" || {
    echo "FAIL $1: the error does not name the journal, its line and what is wrong"; exit 1; }
}
cp "$work/run/journal.jsonl" "$work/journal.whole"

# The last job entry is lost, and with it the end.
line=$(python3 - "$work/journal.whole" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
jobs = [i for i, l in enumerate(lines) if "job" in json.loads(l)]
print(jobs[-1] + 1)
PY
)
grep -v '"finished"' "$work/journal.whole" | sed "${line}d" > "$work/run/journal.jsonl"
refused lost " is entry $line but was written as entry $((line + 1)): an entry before it was removed"

# A result's metric is edited.
python3 - "$work/journal.whole" "$work/run/journal.jsonl" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
at = next(i for i, l in enumerate(lines) if l.startswith('{"result"'))
head, tail = lines[at].split('"metric":', 1)
lines[at] = head + '"metric":0.123456' + tail[tail.index(","):]
open(sys.argv[2], "w").write("\n".join(l for l in lines if '"finished"' not in l) + "\n")
PY
refused edited " was changed after it was written"

# An older packtune's journal has no seals: its replay finds the lost job, where the trial's
# reports and result come to a tuner that never gave that job.
python3 - "$work/journal.whole" "$work/run/journal.jsonl" "$line" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
out = []
for i, l in enumerate(lines, 1):
    entry = json.loads(l)
    entry.pop("_seq"); entry.pop("_crc")
    if i != int(sys.argv[3]) and "finished" not in entry:
        out.append(json.dumps(entry))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
refused old_lost ": successive halving: a result for trial [0-9]*, which has no running job"
echo "PASS"
