#!/usr/bin/env bash
# `packtune actor --driver-timeout SECONDS`: an actor whose driver falls silent (the driver
# holds at its first report, PACKTUNE_TEST_HOLD, and so sends nothing more) exits 1 with one
# line saying so. No wall-clock window: the actor's exit is awaited with a generous bound,
# whatever the machine's load.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

cat > "$work/config.json" <<'JSON'
{
  "seed": 3, "heartbeat_seconds": 0.5, "join_timeout_seconds": 120, "max_pack": 1,
  "budget": {"unit": "epochs", "max": 1},
  "tuner": {"name": "random", "trials": 4},
  "data": {"train_size": 2000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 1, "width": 64, "batch_size": 64},
  "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01}}
}
JSON

# Bad values are input errors, as for `packtune node`.
for value in 0 -1; do
  set +e
  "$packtune" actor --driver "ipc://$work/none.ipc" --driver-timeout "$value" > /dev/null 2> "$work/bad.err"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "--driver-timeout $value exited $rc" "$work/bad.err"
  grep -q -- "--driver-timeout: expected seconds > 0" "$work/bad.err" || fail "--driver-timeout $value" "$work/bad.err"
done

endpoint="ipc://$work/driver.ipc"
PACKTUNE_TEST_HOLD="driver.reported:$work/driver.hold" \
  "$packtune" run "$work/config.json" --out "$work/out" --actors 0 --listen "$endpoint" > "$work/driver.log" 2>&1 &
driver=$!
pids+=("$driver")
"$packtune" actor --driver "$endpoint" --driver-timeout 2 > "$work/actor.out" 2> "$work/actor.err" &
actor=$!
pids+=("$actor")

# Joined and trained: the driver holds at its first report, silent from then on.
wait_held "$work/driver.hold" "$driver" || fail "the driver never got a report" "$work/driver.log" "$work/actor.err"
for _ in $(seq 2400); do  # at most 120 s; the actor gives up after 2 s of silence
  kill -0 "$actor" 2>/dev/null || break
  sleep 0.05
done
set +e
kill -0 "$actor" 2>/dev/null && { kill -9 "$driver"; fail "the actor still runs 120 s after its driver stopped" "$work/actor.err"; }
wait "$actor"
rc=$?
kill -9 "$driver"
wait "$driver" 2>/dev/null  # reaped here, quietly: the shell would report the kill
set -e
[ "$rc" = 1 ] || fail "the actor exited $rc" "$work/actor.out" "$work/actor.err"
line="no message from the driver at $endpoint for 2 s; stopping this actor"
[ "$(grep -cF -- "$line" "$work/actor.err" "$work/actor.out" | awk -F: '{ n += $2 } END { print n }')" = 1 ] ||
  fail "the actor did not say once why it stopped" "$work/actor.out" "$work/actor.err"
echo "1 passed, 0 failed: an actor whose driver is silent for --driver-timeout exits with one line"
