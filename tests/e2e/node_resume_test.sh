#!/usr/bin/env bash
# Nodes and actors outlive a driver killed with -9: `packtune run --resume` on the
# same endpoint answers a peer it does not know with Rejoin, and they join it again.
# 1. Killed once a result is journaled (PACKTUNE_TEST_HOLD=driver.result): the node's actor,
#    training, is told to rejoin; it drops its pack, says Hello, and finishes the experiment;
#    the node exits 0 once the driver has shut its actor down.
# 2. Killed while the node's one actor holds at its first job (actor.assigned): nothing can
#    train until the node rejoins (as node 1, its old id); then the held actor is killed, the
#    node restarts it, and the new actor, linked to node 1, finishes the experiment.
# The actor's and node's patience with a silent driver is long (heartbeat_seconds 5 gives the
# actor 150 s, --driver-timeout 300), so a slow machine between kill and resume is no matter.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

tiny_config "$work/config.json" \
  '{"actors": 0, "tuner": {"name": "random", "trials": 4}, "heartbeat_seconds": 5, "join_timeout_seconds": 300}'

check_results() {  # $1: name
  python3 - "$work/$1/results.jsonl" <<'PY'
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
finals = collections.Counter(r["trial"] for r in rows if r["final"])
assert set(finals) == set(range(4)) and max(finals.values()) == 1, finals
print(f"{sys.argv[1]}: {len(rows)} reports, 4 trials finished once each")
PY
}
# Starts the driver held at $2 (a point) and a node of one actor (its env: $3); kills the
# driver with -9 once a process holds there, and resumes it in the background ($resumed).
kill_and_resume() {  # $1: name, $2: driver hold point or "", $3: node hold point or ""
  local name="$1" endpoint="ipc://$work/$1.ipc" held="$work/$1.held"
  env ${2:+PACKTUNE_TEST_HOLD=$2:$held} "$packtune" run "$work/config.json" --out "$work/$name" \
    --listen "$endpoint" --quiet > "$work/$name.driver" 2>&1 &
  driver=$!
  pids+=("$driver")
  env ${3:+PACKTUNE_TEST_HOLD=$3:$held} "$packtune" node --driver "$endpoint" --actors 1 --threads 1 \
    --driver-timeout 300 --log-dir "$work/$name.logs" > "$work/$name.node" 2>&1 &
  node=$!
  pids+=("$node")
  wait_held "$held" "$driver" || fail "$name: no hold" "$work/$name.driver" "$work/$name.node"
  kill -9 "$driver"
  wait "$driver" 2> /dev/null || true
  "$packtune" run --resume "$work/$name" --listen "$endpoint" > "$work/$name.resumed" 2>&1 &
  resumed=$!
  pids+=("$resumed")
}

kill_and_resume result driver.result ""
wait_for "$resumed"
[ "$code" -eq 0 ] || fail "result: the resumed driver exited $code" "$work/result.resumed" "$work/result.node"
wait_for "$node"
[ "$code" -eq 0 ] || fail "result: the node exited $code" "$work/result.node"
grep -q "asking it to join again" "$work/result.resumed" || fail "result: no Rejoin" "$work/result.resumed"
grep -q "dropping [0-9]* job(s) and joining again" "$work/result.logs/actor-0.log" ||
  fail "result: the actor did not rejoin on the driver's word" "$work/result.logs/actor-0.log"
check_results result

kill_and_resume held "" actor.assigned
until grep -q "node 1: joined the driver again" "$work/held.node"; do
  kill -0 "$resumed" 2> /dev/null || fail "held: the resumed driver ended first" "$work/held.resumed" "$work/held.node"
  sleep 0.05
done
kill -9 "$(cat "$work/held.held")"
wait_for "$resumed"
[ "$code" -eq 0 ] || fail "held: the resumed driver exited $code" "$work/held.resumed" "$work/held.node"
wait_for "$node"
[ "$code" -eq 0 ] || fail "held: the node exited $code" "$work/held.node"
# The resumed driver's lines of driver.log: the file is appended to, after the killed one's.
sed -n '/\] resuming /,$p' "$work/held/driver.log" > "$work/held.resumed.log"
grep -q "node 1 joined from" "$work/held.resumed.log" && grep -q "node 1 slot 0" "$work/held.resumed.log" ||
  fail "held: the node did not rejoin as node 1 with its actor" "$work/held.resumed"
check_results held
echo "PASS"
