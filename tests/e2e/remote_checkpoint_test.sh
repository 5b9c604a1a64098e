#!/usr/bin/env bash
# Checkpoints without a shared file system: a node in a mount namespace of its own, where the
# driver's output folder is an empty tmpfs, trains a Hyperband sweep with promotions. Its
# actors must send every checkpoint to the driver's store and fetch every resume from it over
# ZeroMQ. The reports equal those of the same experiment with the driver's own actors (which
# share the store and copy nothing), within 2e-3.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

if ! unshare --mount --propagation private true 2>/dev/null; then
  echo "SKIPPED: this test needs a mount namespace (unshare --mount, as root)"
  exit 77
fi

cat > "$work/config.json" <<'JSON'
{
  "seed": 11, "heartbeat_seconds": 0.5, "join_timeout_seconds": 30, "max_pack": 2,
  "budget": {"unit": "epochs", "min": 0.25, "max": 1, "report_every": 0.25},
  "tuner": {"name": "hyperband", "eta": 2, "trials": 10},
  "data": {"train_size": 2000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 1, "width": 32, "batch_size": 64, "optimizer": "adam"},
  "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01}}
}
JSON
# The prelude's fail, with only the last lines of each file: the node's and actors' logs are long.
fail() { echo "FAILED: $1"; shift; for f in "$@"; do echo "--- $f"; tail -40 "$f"; done; exit 1; }

# 1. On one machine: the driver's two actors read and write the store directly.
"$packtune" run "$work/config.json" --out "$work/local" --actors 2 --quiet > "$work/local.log" 2>&1 ||
  fail "the local run failed" "$work/local.log"

# 2. The same experiment, its actors behind a node that cannot see the driver's output folder.
mkdir -p "$work/remote" "$work/node"
endpoint="ipc://$work/driver.ipc"
"$packtune" run "$work/config.json" --out "$work/remote" --actors 0 --listen "$endpoint" --quiet \
  > "$work/remote.log" 2>&1 &
driver=$!
pids+=("$driver")
unshare --mount --propagation private sh -c \
  "mount -t tmpfs none '$work/remote' && exec '$packtune' node --driver '$endpoint' --actors 2 --work-dir '$work/node'" \
  > "$work/node.log" 2>&1 &
node=$!
pids+=("$node")
wait "$driver" || fail "the driver of the remote run failed" "$work/remote.log" "$work/node.log"
wait "$node" || fail "the node did not exit cleanly" "$work/node.log"

cat "$work/node/logs"/actor-*.log > "$work/actors.log"
grep -q "checkpoints travel over ZeroMQ" "$work/actors.log" || fail "the node's actors saw the driver's store" "$work/actors.log"
sent=$(grep -c "sent to the driver" "$work/actors.log" || true)
fetched=$(grep -c "fetched from the driver" "$work/actors.log" || true)
[ "$sent" -gt 0 ] && [ "$fetched" -gt 0 ] || fail "expected checkpoints sent ($sent) and fetched ($fetched)" "$work/actors.log"
! grep -q "cannot resume" "$work/actors.log" || fail "a resume fell back" "$work/actors.log"
! ls "$work/remote/checkpoints" | grep -q '\.part$' || fail "partial files were left in the store"
leftover=$(find "$work/node" -name '*.h5*' | wc -l)
[ "$leftover" -eq 0 ] || fail "the node's work folder kept $leftover checkpoint file(s)"

"$py" "$compare" "$work/local/results.jsonl" \
  "$work/remote/results.jsonl" --tolerance 2e-3 || fail "the remote run's reports differ from the local run's"
echo "sent $sent checkpoint(s) to the driver and fetched $fetched over ZeroMQ"
