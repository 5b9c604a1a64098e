#!/usr/bin/env bash
# `packtune run --resume DIR` checks the data it resumes on (docs/faults.md#changed-data): a run
# on a user's NumPy pair, killed with -9 after its first result, whose x.npy is then cut from
# 8 features to 4:
#  - `--resume DIR` is refused (exit 2) with one line naming x.npy and not y.npy, and leaves
#    every file of the results folder as the killed driver left it;
#  - `--resume DIR --allow-changed-data` runs on, and the journal records which file changed
#    and that the user allowed it; a later `--resume` of the finished run checks against the
#    data the journal recorded last;
#  - --allow-changed-data without --resume is refused;
#  - a results folder whose journal records no fingerprints (a run of an older packtune)
#    resumes as before, with one line saying its data could not be checked.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

# x: 1,200 rows of `features` float32 features; y: labels 0..2 from the first two features.
make_data() {
  "$py" - "$work" "$1" <<'PY' || fail "writing x.npy and y.npy"
import os, sys
import numpy as np
out, features = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(5)
x = rng.standard_normal((1200, 8)).astype(np.float32)
y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64)
np.save(os.path.join(out, "x.npy"), np.ascontiguousarray(x[:, :features]))
np.save(os.path.join(out, "y.npy"), y)
PY
}
make_data 8
tiny_config "$work/config.json" "{\"tuner\": {\"name\": \"random\", \"trials\": 3},
  \"data\": {\"format\": \"npy\", \"x\": \"$work/x.npy\", \"y\": \"$work/y.npy\", \"validation_size\": 200}}"

# The flag belongs to a resume: a new run records the data it starts on.
set +e
"$packtune" run "$work/config.json" --out "$work/fresh" --allow-changed-data > "$work/fresh.out" 2>&1
code=$?
set -e
[ "$code" -eq 2 ] && grep -q -- "--allow-changed-data goes with --resume" "$work/fresh.out" && [ ! -e "$work/fresh" ] ||
  fail "--allow-changed-data without --resume was not refused (exit $code)" "$work/fresh.out"

# Runs the config into $work/$1 and kills its driver with -9 once a job has completed (the
# result is journaled and jobs are left).
killed_run() {
  PACKTUNE_TEST_HOLD="driver.result:$work/$1.hold" \
    "$packtune" run "$work/config.json" --out "$work/$1" --quiet > "$work/$1.out" 2>&1 &
  local driver=$!
  pids+=("$driver")
  wait_held "$work/$1.hold" "$driver" || fail "$1: the run never completed a job" "$work/$1.out"
  kill -9 "$driver"
  wait "$driver" 2>/dev/null || true
  # Its actors die with it, not at once: none may write into the folder after this.
  while pgrep -f "packtune-$driver" > /dev/null; do sleep 0.1; done
  grep -q '"finished"' "$work/$1/journal.jsonl" && fail "$1: killed after the end"
  return 0
}

# Every file of a results folder: name, size, modification time and content.
snapshot() {
  (cd "$1" && find . -type f -printf '%P %s %T@\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum)
}

killed_run changed
"$py" -c 'import json,sys; h=json.loads(open(sys.argv[1]).readline()); assert [f["path"] for f in h["data_files"]] == [sys.argv[2] + "/x.npy", sys.argv[2] + "/y.npy"], h.get("data_files")' \
  "$work/changed/journal.jsonl" "$work" || fail "the journal's header does not record the two data files" "$work/changed/journal.jsonl"
snapshot "$work/changed" > "$work/before"
# y.npy is written again with the same bytes (a data script run again): only x.npy changed.
make_data 4

set +e
"$packtune" run --resume "$work/changed" > "$work/refused.out" 2>&1
code=$?
set -e
[ "$code" -eq 2 ] || fail "a resume on a changed x.npy exited $code, expected 2" "$work/refused.out"
[ "$(wc -l < "$work/refused.out")" -eq 1 ] || fail "a resume on changed data said more than one line" "$work/refused.out"
grep -qF "$work/x.npy" "$work/refused.out" || fail "the refusal does not name x.npy" "$work/refused.out"
grep -qF "$work/y.npy" "$work/refused.out" && fail "the refusal names y.npy, which did not change" "$work/refused.out"
grep -q -- "--allow-changed-data" "$work/refused.out" || fail "the refusal does not say how to go on" "$work/refused.out"
snapshot "$work/changed" | cmp -s - "$work/before" ||
  fail "the refused resume changed the results folder" <(diff "$work/before" <(snapshot "$work/changed"))
echo "refused: $(cat "$work/refused.out")"

"$packtune" run --resume "$work/changed" --allow-changed-data --quiet > "$work/allowed.out" 2>&1 ||
  fail "--resume --allow-changed-data" "$work/allowed.out"
"$py" - "$work/changed/journal.jsonl" "$work" <<'PY' || fail "the journal does not record the allowed change" "$work/changed/journal.jsonl"
import json, sys
entries = [json.loads(line) for line in open(sys.argv[1])]
records = [e["data_files"] for e in entries[1:] if "data_files" in e]
assert len(records) == 1, records
r = records[0]
assert r["allowed"] == "--allow-changed-data", r
assert len(r["changed"]) == 1 and r["changed"][0].startswith(sys.argv[2] + "/x.npy"), r
assert [f["path"] for f in r["fingerprints"]] == [sys.argv[2] + "/x.npy", sys.argv[2] + "/y.npy"], r
assert "finished" in entries[-1], entries[-1]
print("journaled:", r["changed"][0])
PY
# The journal's last record is the data now: the finished run resumes without the flag.
"$packtune" run --resume "$work/changed" > "$work/again.out" 2>&1 || fail "resuming the finished run" "$work/again.out"
grep -q "finished already" "$work/again.out" || fail "the finished run did not say so" "$work/again.out"

# A journal without fingerprints, as an older packtune wrote it: resumes, and says so once.
killed_run old
"$py" - "$work/old/journal.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().split("\n")
header = json.loads(lines[0])
del header["data_files"]
header.pop("_seq"); header.pop("_crc")  # nor sealed its lines
lines[0] = json.dumps(header)
open(sys.argv[1], "w").write("\n".join(lines))
PY
"$packtune" run --resume "$work/old" > "$work/old.resumed" 2>&1 || fail "resuming a run without fingerprints" "$work/old.resumed"
[ "$(grep -c "could not be checked" "$work/old.resumed")" -eq 1 ] ||
  fail "resuming a run without fingerprints did not say once that its data could not be checked" "$work/old.resumed"
grep "could not be checked" "$work/old.resumed"
echo "PASS"
