#!/usr/bin/env bash
# Out of memory on purpose: the memory model underestimates (memory_estimate_scale 0.3) and
# the actor holds its trials to 10 MiB, so the first pack runs out of memory. The planner
# must split it (fuse "always": the six trials start as one fused unit), every trial must finish, and each must report what it reports in a run
# with memory to spare (a restarted trial trains the same from its seed).
set -euo pipefail
packtune="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat > "$work/tight.json" <<'JSON'
{
  "seed": 3,
  "budget": {"unit": "epochs", "max": 1},
  "tuner": {"name": "random", "trials": 6},
  "actors": 1,
  "max_pack": 6,
  "fuse": "always",
  "actor_memory": "10MiB",
  "memory_estimate_scale": 0.3,
  "data": {"train_size": 2000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 1, "width": 64, "batch_size": 32, "optimizer": "adam"},
  "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01}}
}
JSON
grep -v -e actor_memory -e memory_estimate_scale "$work/tight.json" > "$work/roomy.json"

"$packtune" run "$work/tight.json" --out "$work/tight" > "$work/tight.log" 2>&1
"$packtune" run "$work/roomy.json" --out "$work/roomy" --quiet > "$work/roomy.log" 2>&1

grep -q "ran out of memory" "$work/tight.log" || { echo "FAILED: no out-of-memory in the tight run"; cat "$work/tight.log"; exit 1; }
grep -q "the pack is split" "$work/tight.log" || { echo "FAILED: the pack was not split"; exit 1; }

/usr/bin/python3 - "$work/tight" "$work/roomy" <<'PY'
import json, sys
def finals(d):
    return {r["trial"]: r for r in map(json.loads, open(f"{d}/results.jsonl")) if r["final"]}
tight, roomy = finals(sys.argv[1]), finals(sys.argv[2])
assert sorted(tight) == list(range(6)), f"every trial must finish: {sorted(tight)}"
for t, r in roomy.items():
    for m in ("val_accuracy", "val_loss"):
        assert abs(tight[t][m] - r[m]) < 1e-3, (t, m, tight[t][m], r[m])
print("1 passed, 0 failed: the pack ran out of memory, was split, and all 6 trials match the roomy run")
PY
