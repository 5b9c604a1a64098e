#!/usr/bin/env bash
# Out of memory on purpose, in a training step and in an evaluation: the memory model
# underestimates (memory_estimate_scale) and the actor holds its trials to a few MiB, so the
# first pack runs out of memory. The planner must split it (fuse "always": the trials start
# as one fused unit), every trial must finish, and each must report what it reports in a run
# with memory to spare (a restarted trial trains the same from its seed).
#
#   step        six MLPs at batch 32 in 7 MiB: the fused step does not fit.
#   evaluation  four CNNs at batch 8 in 16 MiB: the fused step (32 images) fits, but the
#               evaluation takes 64 validation images per member at once (evaluation_chunk),
#               256 for the unit, and its first convolution alone needs 12 MiB.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

cat > "$work/step.json" <<'JSON'
{
  "seed": 3,
  "budget": {"unit": "epochs", "max": 1},
  "tuner": {"name": "random", "trials": 6},
  "actors": 1,
  "max_pack": 6,
  "fuse": "always",
  "actor_memory": "7MiB",
  "memory_estimate_scale": 0.3,
  "evaluate_test": false,
  "data": {"train_size": 2000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 1, "width": 64, "batch_size": 32, "optimizer": "adam"},
  "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01}}
}
JSON
cat > "$work/evaluation.json" <<'JSON'
{
  "seed": 5,
  "budget": {"unit": "epochs", "max": 1},
  "tuner": {"name": "random", "trials": 4},
  "actors": 1,
  "max_pack": 4,
  "fuse": "always",
  "actor_memory": "16MiB",
  "memory_estimate_scale": 0.2,
  "evaluate_test": false,
  "data": {"train_size": 512, "validation_size": 256},
  "model": {"family": "cnn", "depth": 2, "channels": 16, "kernel": 3, "width": 0, "batch_size": 8, "optimizer": "adam"},
  "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01}}
}
JSON

passed=0
check() {  # case name, trials, the out-of-memory message the tight run must log
  local name=$1 trials=$2 expect=$3
  grep -v -e actor_memory -e memory_estimate_scale "$work/$name.json" > "$work/$name-roomy.json"
  "$packtune" run "$work/$name.json" --out "$work/$name" > "$work/$name.log" 2>&1
  "$packtune" run "$work/$name-roomy.json" --out "$work/$name-roomy" --quiet > "$work/$name-roomy.log" 2>&1
  grep -q "ran out of memory ($expect" "$work/$name.log" ||
    { echo "FAILED: $name: no '$expect' out-of-memory in the tight run"; cat "$work/$name.log"; exit 1; }
  grep -q "the pack is split" "$work/$name.log" || { echo "FAILED: $name: the pack was not split"; exit 1; }
  "$py" - "$name" "$trials" "$work/$name" "$work/$name-roomy" <<'PY'
import json, sys
name, trials = sys.argv[1], int(sys.argv[2])
def finals(d):
    return {r["trial"]: r for r in map(json.loads, open(f"{d}/results.jsonl")) if r["final"]}
tight, roomy = finals(sys.argv[3]), finals(sys.argv[4])
assert sorted(tight) == list(range(trials)), f"{name}: every trial must finish: {sorted(tight)}"
for t, r in roomy.items():
    for m in ("val_accuracy", "val_loss"):
        assert abs(tight[t][m] - r[m]) < 1e-3, (name, t, m, tight[t][m], r[m])
PY
  passed=$((passed + 1))
}
check step 6 "out of memory"
check evaluation 4 "evaluating: out of memory"

# Memory for no trial at all, fuse auto: the throughput profile fails (out of memory) once and
# is not asked again, each trial fails with the reason, and the run ends with exit 1 and one
# line, instead of asking for the profile again and again for ever.
"$py" - "$work/step.json" "$work/none.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update({"actor_memory": "1KiB", "fuse": "auto", "max_pack": 4, "tuner": {"name": "random", "trials": 3}})
c.pop("memory_estimate_scale")
json.dump(c, open(sys.argv[2], "w"))
PY
set +e
timeout 120 "$packtune" run "$work/none.json" --out "$work/none" --quiet > "$work/none.log" 2> "$work/none.err"
code=$?
set -e
[ "$code" -eq 1 ] && grep -q "every trial failed; the last: trial .* more than any actor has" "$work/none.err" || {
  echo "FAILED: no memory for any trial: exit $code"; cat "$work/none.err"; tail "$work/none.log"; exit 1; }
profiles=$(grep -c "could not profile" "$work/none.log" || true)
[ "$profiles" -le 1 ] || { echo "FAILED: the failed profile was asked for $profiles times"; exit 1; }
passed=$((passed + 1))
echo "$passed passed, 0 failed: each pack ran out of memory (in a step, in an evaluation), was split, and every trial matches the roomy run; with memory for no trial the run failed once, with the reason"
