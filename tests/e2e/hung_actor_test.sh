#!/usr/bin/env bash
# A hung actor never holds a run for good (docs/faults.md, Hung actors). The run's only actor
# gets SIGSTOP inside its first job (PACKTUNE_TEST_HOLD=actor.assigned): silent past
# actor_timeout_seconds while the driver is not, it is killed and its slot restarts; the new
# actor trains the lost job, and the run ends with every report. Then the same with a stand-in
# actor that stops itself at every start before it joins: each is killed once the join timeout
# passes, the slot is given up after its restarts, and the driver exits 1 naming why.
# `timeout 300` bounds a regression (the old driver waited for ever); no step is timed.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

tiny_config "$work/config.json" '{"actor_timeout_seconds": 3, "heartbeat_seconds": 0.5, "join_timeout_seconds": 10,
                                  "evaluate_test": false}'
PACKTUNE_TEST_HOLD="actor.assigned:$work/held" timeout 300 "$packtune" run "$work/config.json" --out "$work/run" \
  > "$work/run.out" 2>&1 &
driver=$!
pids+=("$driver")
wait_held "$work/held" "$driver" || fail "the actor never took a job" "$work/run.out"
# The held file stays: the restarted actor, which finds it, does not hold (test_hold.hpp).
kill -STOP "$(cat "$work/held")"
wait_for "$driver"
[ "$code" -ne 124 ] || fail "the driver still waited after 300 s for its stopped actor" "$work/run.out"
[ "$code" -eq 0 ] || fail "exit $code, expected 0 once the stopped actor was replaced" "$work/run.out"
grep -q "killed: actor 0: no message for 3 s" "$work/run/driver.log" ||
  fail "the stopped actor was not killed for its silence" "$work/run/driver.log"
grep -q "restarted" "$work/run/driver.log" || fail "the slot did not restart" "$work/run/driver.log"
"$py" - "$work/run/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
seen = sorted((r["trial"], r["budget"]) for r in rows)
assert seen == [(0, 0.25), (0, 0.5), (1, 0.25), (1, 0.5)], seen
PY
echo "stopped actor: killed after 3 s of silence, restarted, and the run finished"

# Every start of the actor stops itself before it joins: the driver kills each one after the
# join timeout, gives the slot up after its restarts, and exits 1.
mkdir "$work/bin"
cp "$packtune" "$work/bin/packtune"
cat > "$work/bin/packtune-actor" <<'SH'
#!/bin/sh
kill -STOP $$
SH
chmod +x "$work/bin/packtune-actor"
tiny_config "$work/stops.json" '{"actor_timeout_seconds": 1, "heartbeat_seconds": 0.5, "join_timeout_seconds": 1,
                                 "evaluate_test": false}'
set +e
timeout 300 "$work/bin/packtune" run "$work/stops.json" --out "$work/stops" > "$work/stops.out" 2>&1
code=$?
set -e
[ "$code" -ne 124 ] || fail "the driver still waited after 300 s for actors that never joined" "$work/stops.out"
[ "$code" -eq 1 ] || fail "exit $code, expected 1" "$work/stops.out"
grep -q "did not join the driver within 1 s of its start" "$work/stops/driver.log" ||
  fail "the stopped starts were not killed" "$work/stops/driver.log"
grep -q "giving it up" "$work/stops.out" || fail "the slot was not given up" "$work/stops.out"
grep -q "^packtune: error: no actor is left to train on" "$work/stops.out" || fail "no one-line error" "$work/stops.out"
echo "PASS"
