#!/usr/bin/env bash
# A partition: a node's actor runs in a network namespace joined to the driver by a veth
# pair. Mid-run the link goes down for longer than actor_timeout_seconds: the driver retires
# the actor and gives its jobs to its own actor. When the link comes back, the reports the
# cut-off actor sent for those jobs are refused (their leases are old) or were lost with its
# connection, it rejoins as a new
# actor and gets new work, and the experiment ends with the reports of a run that was never
# cut (no trial reports a budget twice; metrics within 2e-3). Needs root (skipped, exit 77).
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
if [ "$(id -u)" -ne 0 ] || ! ip netns list > /dev/null 2>&1; then echo "SKIP: needs root and ip netns"; exit 77; fi

net="$(private_net $$)"
ns="ptpart-$$"; veth="ptp$$"
driver_ip="$net.1"; node_ip="$net.2"
cleanup_net() {
  if ip netns list | grep -qw "$ns"; then
    for pid in $(ip netns pids "$ns" 2> /dev/null); do kill -KILL "$pid" 2> /dev/null || true; done
    ip netns del "$ns" 2> /dev/null || true
  fi
  ip link del "$veth" 2> /dev/null || true
}
trap 'cleanup_net; cleanup_work' EXIT
ip netns add "$ns"
ip link add "$veth" type veth peer name "${veth}n"
ip link set "${veth}n" netns "$ns"
ip addr add "$driver_ip/30" dev "$veth"
ip link set "$veth" up
ip netns exec "$ns" ip addr add "$node_ip/30" dev "${veth}n"
ip netns exec "$ns" ip link set "${veth}n" up
ip netns exec "$ns" ip link set lo up

# Random search, 48 trials of 3 epochs (enough that the run outlasts the cut and TCP's
# retransmission back-off after it), one thread per actor everywhere and no fused units (BLAS
# and a fused unit sum in another order, and the reports are compared with a run of two local
# actors).
port=$(free_port $$)
cat > "$work/config.json" <<JSON
{
  "seed": 8,
  "budget": {"unit": "epochs", "min": 3, "max": 3, "report_every": 0.25},
  "tuner": {"name": "random", "trials": 48},
  "actors": 1,
  "threads_per_actor": 1,
  "max_pack": 2,
  "fuse": "never",
  "heartbeat_seconds": 0.5,
  "actor_timeout_seconds": 3,
  "listen": "tcp://$driver_ip:$port",
  "insecure": true,
  "data": {"train_size": 6000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 2, "width": 128, "batch_size": 64, "optimizer": "adam"},
  "space": {"lr": {"type": "loguniform", "low": 0.0005, "high": 0.01}}
}
JSON

"$packtune" run "$work/config.json" --out "$work/ref" --actors 2 --listen ipc --quiet > "$work/ref.out" 2>&1

"$packtune" run "$work/config.json" --out "$work/cut" > "$work/cut.out" 2>&1 &
driver=$!
pids+=("$driver")
ip netns exec "$ns" "$packtune" node --driver "tcp://$driver_ip:$port" --actors 1 --threads 1 \
  --log-dir "$work/node-logs" --work-dir "$work/node-work" --driver-timeout 60 > "$work/node.out" 2>&1 &
pids+=("$!")

# Cut the link once the node's actor has reported for half an epoch of a trial: early enough that
# the driver's own actor cannot finish the other jobs before the link is back.
node_actor=""
for _ in $(seq 1 600); do
  # The driver writes driver.log once it holds the results folder.
  node_actor="$(sed -n 's/.*actor \([0-9]*\) joined from .*node 1 slot 0.*/\1/p' "$work/cut/driver.log" 2> /dev/null | head -1 || true)"
  if [ -n "$node_actor" ] && python3 - "$work/cut/results.jsonl" "$node_actor" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])] if open(sys.argv[1]).read() else []
sys.exit(0 if any(r["actor"] == int(sys.argv[2]) and r["budget"] >= 0.5 for r in rows) else 1)
PY
  then break; fi
  sleep 0.1
done
[ -n "$node_actor" ] || { echo "FAIL: the node's actor never joined"; cat "$work/cut.out"; exit 1; }
echo "cutting the link of actor $node_actor"
ip link set "$veth" down
for _ in $(seq 1 200); do
  grep -q "actor $node_actor is out of service" "$work/cut.out" && break
  sleep 0.1
done
sleep 1  # the cut-off actor trains on and queues reports the driver will refuse
ip link set "$veth" up
echo "link up again"
wait "$driver"

grep "out of service\|heard again\|joined\|refus" "$work/cut/driver.log" || true
# Retired for its own silence or, as the node's one connection went silent with it, with its node.
grep -q "actor $node_actor is out of service: \(no message for 3 s\|its node 1 is out of service\)" "$work/cut.out" || {
  echo "FAIL: the cut-off actor was not retired"; cat "$work/cut.out"; exit 1; }
grep -q "actor $node_actor on .* is heard again after it was retired\|node 1 on .* is heard again; its [1-9][0-9]* actor(s) retired with it" "$work/cut.out" || {
  echo "FAIL: the actor never came back"; cat "$work/cut.out"; exit 1; }
# The reports it queued during the cut reach the driver, which refuses them, when the link comes
# back on the same connection. Once (a quiet suite run, 2026-11-29, after peers began to redial)
# none arrived: if the connection went down with the cut, the actor's sends find no pipe and go
# with it (protocol/redial.hpp); not confirmed. Either way none is taken: the results below hold
# each trial's budgets once.
if grep -q "refusing Report from retired actor $node_actor" "$work/cut.out"; then
  echo "the cut-off actor's queued reports were refused"
else
  echo "the cut-off actor's queued reports went with its connection"
fi
rejoined="$(sed -n "s/.*actor \([0-9]*\) joined from .*node 1 slot 0.*/\1/p" "$work/cut/driver.log" | tail -1)"
[ "$rejoined" != "$node_actor" ] || { echo "FAIL: the actor did not rejoin"; exit 1; }
python3 - "$work/cut/results.jsonl" "$rejoined" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n = sum(r["actor"] == int(sys.argv[2]) for r in rows)
assert n > 0, f"the rejoined actor {sys.argv[2]} got no work"
print(f"the rejoined actor {sys.argv[2]} wrote {n} report(s)")
PY
python3 "$compare" "$work/ref/results.jsonl" "$work/cut/results.jsonl"
echo "PASS"
