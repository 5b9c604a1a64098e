#!/usr/bin/env bash
# A stalled upload costs a worker thread, never the driver's loop: a node's actor, in a mount
# namespace where the driver's output folder is an empty tmpfs, sends its checkpoints over
# ZeroMQ, and the driver holds its first verification (PACKTUNE_TEST_HOLD=driver.verifying, as a
# hostile file would hold a worker until verify's timeout). While it is held, a second node's
# actor must get its Welcome; then the hold is released and the run finishes. Prints how long
# the second actor waited for its Welcome (a figure for docs/security.md, not a bound tested).
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

if ! unshare --mount --propagation private true 2>/dev/null; then
  echo "SKIPPED: this test needs a mount namespace (unshare --mount, as root)"
  exit 77
fi

tiny_config "$work/config.json" '{"actors": 0, "tuner": {"name": "hyperband", "eta": 2, "trials": 4},
  "budget": {"unit": "epochs", "min": 0.25, "max": 0.5, "report_every": 0.25}, "join_timeout_seconds": 600}'
endpoint="ipc://$work/driver.ipc"
mkdir -p "$work/out" "$work/a" "$work/b"
PACKTUNE_TEST_HOLD="driver.verifying:$work/held" \
  "$packtune" run "$work/config.json" --out "$work/out" --listen "$endpoint" --quiet > "$work/driver.log" 2>&1 &
driver=$!
pids+=("$driver")
wait_listening "$driver" "$work/driver.ipc" "$work/driver.log"

# node NAME: a node of one actor that cannot see the driver's output folder.
node() {
  unshare --mount --propagation private sh -c \
    "mount -t tmpfs none '$work/out' && exec '$packtune' node --driver '$endpoint' --actors 1 --threads 1 --work-dir '$work/$1'" \
    > "$work/$1.log" 2>&1 &
  pids+=("$!")
}
node a
# Its first upload reaches a worker, which holds.
until [ -f "$work/held" ]; do
  kill -0 "$driver" 2>/dev/null || fail "the driver ended before any upload was verified" "$work/driver.log" "$work/a.log"
  sleep 0.05
done

start=$(date +%s.%N)
node b
until grep -qs "connected to" "$work/b/logs/actor-0.log"; do
  kill -0 "$driver" 2>/dev/null || fail "the driver ended while the verification was held" "$work/driver.log"
  sleep 0.02
done
joined=$(date +%s.%N)
[ -f "$work/held" ] || fail "the hold was released before the second actor joined"

rm -f "$work/held"
wait_for "$driver"
[ "$code" -eq 0 ] || fail "the driver exited $code" "$work/driver.log" "$work/a.log" "$work/b.log"
grep -qs "sent to the driver" "$work/a/logs/actor-0.log" "$work/b/logs/actor-0.log" ||
  fail "no checkpoint travelled over ZeroMQ" "$work/a/logs/actor-0.log"
"$py" -c "import sys; print(f'1 passed, 0 failed: a second actor joined {float(sys.argv[2]) - float(sys.argv[1]):.2f} s after it started, while an upload\'s verification was held')" "$start" "$joined"
