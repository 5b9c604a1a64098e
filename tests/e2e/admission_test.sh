#!/usr/bin/env bash
# Admission: a driver with no actors of its own and a hostile peer (hostile_peer.cpp, the
# test's second argument) that speaks the protocol. As a stranger it gets no answer but Rejoin;
# as an actor its offer for another trial, its upload past the declared size, its fetch of a
# file it was not given and its report with metrics named trial and budget are refused; its
# Hello while it holds a job sends the job back to the queue. The run ends, results.jsonl holds
# only its honest reports, the store holds none of its files, and `packtune report` reads the folder.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
hostile="${2:-}"
[ -x "$hostile" ] || fail "usage: admission_test.sh PACKTUNE HOSTILE_PEER (got '$hostile')"

tiny_config "$work/c.json" '{"actors": 0, "tuner": {"name": "random", "trials": 3},
                             "evaluate_test": false, "join_timeout_seconds": 600}'
endpoint="ipc://$work/d.ipc"
"$packtune" run "$work/c.json" --out "$work/out" --listen "$endpoint" > "$work/driver.out" 2>&1 &
driver=$!
pids+=("$driver")
wait_listening "$driver" "$work/d.ipc" "$work/driver.out"
"$hostile" "$endpoint" > "$work/hostile.out" 2>&1 || fail "the hostile peer saw the driver take what it must refuse" \
  "$work/hostile.out" "$work/out/driver.log"
wait_for "$driver"
[ "$code" -eq 0 ] || fail "the driver exited $code" "$work/driver.out" "$work/hostile.out"
cat "$work/hostile.out"

"$py" - "$work/out" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
assert len(rows) == 2, f"two honest reports, got {rows}"
for r in rows:
    assert r["val_accuracy"] == 0.25, r
    assert isinstance(r["trial"], int) and 0 <= r["trial"] < 3, r
    assert r["budget"] == 0.5, r
    assert not any(len(k) > 64 for k in r), "a long metric name was written"
left = sorted(os.listdir(f"{out}/checkpoints"))
assert left == [".store"], f"the store took files from the hostile peer: {left}"
print(f"{out}: {len(rows)} honest reports, no file of the hostile peer")
PY
grep -q "refused: Report from a peer that never said Hello to this driver" \
  "$work/out/driver.log" || fail "the driver did not log the stranger's refusal" "$work/out/driver.log"
grep -q "said Hello again" "$work/out/driver.log" || fail "no retirement on a second Hello" "$work/out/driver.log"
grep -q -- "-9223372036854775808" "$work/driver.out" && fail "the summary names a forged trial" "$work/driver.out"
# Log injection (hostile_peer's first part): the forged host names reach the log printable and
# cut, and 20,000 garbage frames are counted in a few lines, not written one a frame.
for log in "$work/out/driver.log" "$work/driver.out"; do
  grep -q '^\[12:00:00\] info FORGED' "$log" && fail "a peer forged a line of $log" "$log"
  LC_ALL=C grep -q -P '[\x00-\x08\x0b-\x1f\x7f]' "$log" && fail "control characters of a peer reached $log"
  longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$log")
  [ "$longest" -lt 1000 ] || fail "$log has a line of $longest characters"
done
grep -q "evil?\[12:00:00\] info FORGED line?\[2J?AAAA" "$work/out/driver.log" || fail "the forged host was not logged cut" "$work/out/driver.log"
garbage=$(grep -c "not packtune's" "$work/out/driver.log" || true)
lines=$(wc -l < "$work/out/driver.log")
[ "$garbage" -ge 1 ] && [ "$garbage" -le 30 ] || fail "20,000 garbage frames took $garbage log lines" "$work/out/driver.log"
[ "$lines" -le 300 ] || fail "driver.log has $lines lines"
echo "injection: forged host names logged cut and printable; 20,000 garbage frames in $garbage line(s) of $lines"
"$packtune" report "$work/out" > "$work/report.out" 2>&1 || fail "packtune report refused the folder" "$work/report.out"
echo "admission: the hostile peer was refused and the run finished"
