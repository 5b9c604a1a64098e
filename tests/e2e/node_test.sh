#!/usr/bin/env bash
# `packtune node`: a driver with no actors of its own (--actors 0) and a node with two actors
# complete a run; then one actor is killed with SIGKILL mid-run: the node restarts it (its log
# says so), the driver requeues its trials at once, every trial finishes once; and nothing of
# ours is left running afterwards, nor the node's work folder.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

config() {  # $1: trials, $2: budget.max
  cat <<JSON
{
  "seed": 7, "heartbeat_seconds": 0.5, "join_timeout_seconds": 30, "max_pack": 2,
  "budget": {"unit": "epochs", "max": $2, "report_every": 0.5},
  "tuner": {"name": "random", "trials": $1},
  "data": {"train_size": 2000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 1, "width": 64, "batch_size": 64, "optimizer": "adam"},
  "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01}}
}
JSON
}

# Starts the driver (--actors 0) and a node with two actors; waits for both.
run_pair() {  # $1: name, $2: trials, $3: budget; then the kill hook runs while they work
  local name="$1"
  config "$2" "$3" > "$work/$name.json"
  local endpoint="ipc://$work/$name.ipc"
  "$packtune" run "$work/$name.json" --out "$work/$name" --actors 0 --listen "$endpoint" \
    > "$work/$name.driver.log" 2>&1 &
  driver=$!
  pids+=("$driver")
  mkdir -p "$work/$name.tmp"  # the node's own work folder goes here, and must go when it ends
  TMPDIR="$work/$name.tmp" "$packtune" node --driver "$endpoint" --actors 2 --log-dir "$work/$name.logs" \
    > "$work/$name.node.log" 2>&1 &
  node=$!
  pids+=("$node")
}

check_results() {  # $1: name, $2: trials
  "$py" - "$work/$1" "$2" <<'PY'
import collections, json, sys
out, trials = sys.argv[1], int(sys.argv[2])
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
finals = collections.Counter(r["trial"] for r in rows if r["final"])
assert set(finals) == set(range(trials)), f"every trial should finish: {sorted(finals)}"
twice = [t for t, n in finals.items() if n > 1]
assert not twice, f"trials reported final twice: {twice}"
print(f"{out}: {len(rows)} reports, {trials} trials finished once each, actors {sorted({r['actor'] for r in rows})}")
PY
}

# 1. A node's two actors train a small run; both exit 0.
run_pair plain 4 1
wait "$driver" || fail "the driver exited $?" "$work/plain.driver.log" "$work/plain.node.log"
wait "$node" || fail "the node exited $? after the driver's Shutdown" "$work/plain.node.log"
grep -q "node 1 joined from .*2 actor(s)" "$work/plain.driver.log" || fail "no node registered" "$work/plain.driver.log"
grep -q "node 1 slot 1" "$work/plain/driver.log" || fail "actors not linked to the node" "$work/plain/driver.log"
check_results plain 4
test -s "$work/plain.logs/actor-0.log" && test -s "$work/plain.logs/actor-1.log"
[ -z "$(ls -A "$work/plain.tmp")" ] || fail "the node left its work folder behind: $(ls -A "$work/plain.tmp")"

# 2. SIGKILL one actor once training reports: the node restarts it and tells the driver. The
# driver holds at its first report (PACKTUNE_TEST_HOLD, include/packtune/test_hold.hpp) until
# the node has restarted the actor, so the run cannot end first however fast the machine is.
export PACKTUNE_TEST_HOLD="driver.reported:$work/driver.hold"
run_pair killed 16 2
unset PACKTUNE_TEST_HOLD
for _ in $(seq 3000); do
  [ -s "$work/driver.hold" ] && break
  sleep 0.1
done
[ -s "$work/driver.hold" ] || fail "the driver never wrote a report" "$work/killed.driver.log" "$work/killed.node.log"
victim=$(pgrep -P "$node" -f -- "--local-index 0" || true)
[ -n "$victim" ] || fail "no actor process of slot 0 under the node" "$work/killed.node.log"
kill -9 "$victim"
for _ in $(seq 3000); do
  grep -q "actor process 0 restarted" "$work/killed.node.log" && break
  sleep 0.1
done
rm "$work/driver.hold"
wait "$driver" || fail "the driver exited $?" "$work/killed.driver.log" "$work/killed.node.log"
wait "$node" || fail "the node exited $?" "$work/killed.node.log"
grep -q "actor process 0 (pid $victim) killed by signal 9; restarting it in 1 s" "$work/killed.node.log" ||
  fail "the node did not say it restarts the actor" "$work/killed.node.log"
grep -q "actor process 0 restarted" "$work/killed.node.log" || fail "the actor was not restarted" "$work/killed.node.log"
grep -q "restart 1 of 3 (the previous process killed by signal 9)" "$work/killed.logs/actor-0.log" ||
  fail "the actor's log does not mark the restart" "$work/killed.logs/actor-0.log"
grep -q "its process killed by signal 9, restarting" "$work/killed.driver.log" ||
  fail "the driver did not retire the actor on the node's word" "$work/killed.driver.log"
check_results killed 16
[ -z "$(ls -A "$work/killed.tmp")" ] || fail "the node left its work folder behind: $(ls -A "$work/killed.tmp")"

# 3. With no actor and no node, the driver gives up after join_timeout_seconds, saying how.
config 2 0.5 | sed 's/"join_timeout_seconds": 30/"join_timeout_seconds": 1/' > "$work/alone.json"
code=0
"$packtune" run "$work/alone.json" --out "$work/alone" --actors 0 --listen "ipc://$work/alone.ipc" \
  > "$work/alone.log" 2>&1 || code=$?
[ "$code" = 1 ] && grep -q "no actor joined within 1 s.*packtune node --driver ipc://$work/alone.ipc" "$work/alone.log" ||
  fail "expected exit 1 naming packtune node after the join timeout, got $code" "$work/alone.log"

# 4. Nothing of ours runs any more (actors included).
sleep 0.5
left=$(pgrep -f -- "$work" || true)
[ -z "$left" ] || fail "processes left: $(ps -o pid,args -p "$(echo $left | tr ' ' ,)")"
echo "1 passed, 0 failed: node runs, a killed actor restarted, nothing left running"
