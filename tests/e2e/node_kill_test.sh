#!/usr/bin/env bash
# A node killed with -9 mid-run: its actors, behind the node's one connection to the driver
# (node/node_relay.hpp), go out of service together with it and their jobs go back to the
# queue; the driver is then killed with -9 too, and `packtune run --resume` with a new node
# finishes the experiment. No result is lost: every report written before the kills is in the
# final results, and every trial finished exactly once. Nothing of either node is left
# running, nor its folders.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

tiny_config "$work/config.json" \
  '{"actors": 0, "tuner": {"name": "random", "trials": 6}, "max_pack": 1, "heartbeat_seconds": 0.5,
    "actor_timeout_seconds": 2, "join_timeout_seconds": 300, "budget": {"unit": "epochs", "max": 1, "report_every": 0.25}}'
endpoint="ipc://$work/driver.ipc"
mkdir -p "$work/tmp"  # the nodes' folders go here, and must be gone at the end

start_node() {  # $1: name
  TMPDIR="$work/tmp" "$packtune" node --driver "$endpoint" --actors 2 --threads 1 --driver-timeout 300 \
    --log-dir "$work/$1.logs" > "$work/$1.node" 2>&1 &
  node=$!
  pids+=("$node")
}

# The driver holds once a job has completed (include/packtune/test_hold.hpp): the node dies
# mid-run however fast the machine is.
PACKTUNE_TEST_HOLD="driver.result:$work/driver.held" "$packtune" run "$work/config.json" --out "$work/out" \
  --listen "$endpoint" > "$work/driver.out" 2>&1 &
driver=$!
pids+=("$driver")
start_node first
wait_held "$work/driver.held" "$driver" || fail "no job completed" "$work/driver.out" "$work/first.node"
first_actors="$(pgrep -P "$node" | tr '\n' ' ')"
[ -n "$first_actors" ] || fail "the node runs no actor" "$work/first.node"
kill -9 "$node"
wait "$node" 2> /dev/null || true
rm "$work/driver.held"
until grep -q "node 1 on .* is out of service" "$work/driver.out"; do
  kill -0 "$driver" 2> /dev/null || break
  sleep 0.05
done
grep -q "node 1 on .* is out of service" "$work/driver.out" || fail "the dead node was not noticed" "$work/driver.out"
[ "$(grep -c "is out of service: its node 1 is out of service" "$work/driver.out")" -eq 2 ] ||
  fail "the node's two actors did not go out of service with it" "$work/driver.out"
kill -9 "$driver" 2> /dev/null || true
wait "$driver" 2> /dev/null || true
cp "$work/out/results.jsonl" "$work/before.jsonl"
[ -s "$work/before.jsonl" ] || fail "no result before the kills" "$work/driver.out"

"$packtune" run --resume "$work/out" --listen "$endpoint" > "$work/resumed.out" 2>&1 &
resumed=$!
pids+=("$resumed")
start_node second
wait_for "$resumed"
[ "$code" -eq 0 ] || fail "the resumed driver exited $code" "$work/resumed.out" "$work/second.node"
wait_for "$node"
[ "$code" -eq 0 ] || fail "the second node exited $code" "$work/second.node"

"$py" - "$work/before.jsonl" "$work/out/results.jsonl" <<'PY'
import collections, json, sys
key = lambda r: (r["trial"], r["budget"], r["val_accuracy"])
before = [json.loads(l) for l in open(sys.argv[1])]
after = [json.loads(l) for l in open(sys.argv[2])]
lost = set(map(key, before)) - set(map(key, after))
assert not lost, f"results lost after --resume: {sorted(lost)}"
finals = collections.Counter(r["trial"] for r in after if r["final"])
assert set(finals) == set(range(6)) and max(finals.values()) == 1, finals
print(f"{len(before)} reports before the kills, all kept; {len(after)} in all, 6 trials finished once each")
PY
for pid in $first_actors; do
  ! kill -0 "$pid" 2> /dev/null || fail "actor process $pid of the killed node still runs"
done
[ -z "$(ls -A "$work/tmp")" ] || fail "the nodes left folders behind: $(ls -A "$work/tmp")"
echo "PASS"
