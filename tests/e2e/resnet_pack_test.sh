#!/usr/bin/env bash
# A fused ResNet trains what its members train alone: 4 ResNet trials of 6 and 8 channels
# (2 stages of 1 basic block, batch norm), SGD with momentum, 60 steps on a small slice of
# Fashion-MNIST, trained one at a time as fused units of one (--max-pack 1 --fuse never) and as one
# fused unit padded to the widest member (--max-pack 4 --fuse always): the same metrics and the
# same final parameters within 2e-3. A padded member's convolutions sum in another order than
# its own, and training amplifies those last bits (for the 6-channel trials, 1e-7 at step 30
# to 1e-4 in the weights at step 60 with these learning rates; 2 to 3 times that in batch
# norm's running statistics, averages of batch statistics, which are held to 1e-2). The
# 8-channel trials need no padding and agree bit for bit. On 2 threads, as pack_equivalence
# runs.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

cat > "$work/config.json" <<'JSON'
{
  "seed": 8,
  "budget": {"unit": "steps", "max": 60, "report_every": 30},
  "tuner": {"name": "random", "trials": 4},
  "actors": 1,
  "threads_per_actor": 2,
  "evaluate_test": false,
  "data": {"train_size": 960, "validation_size": 256},
  "model": {"family": "resnet", "stages": 2, "blocks": 1, "channels": 8, "batch_norm": true,
            "batch_size": 16, "optimizer": "sgd"},
  "space": {
    "lr": {"type": "loguniform", "low": 0.003, "high": 0.02},
    "momentum": {"type": "uniform", "low": 0.0, "high": 0.5},
    "channels": {"type": "choice", "values": [6, 8]}
  }
}
JSON
"$packtune" run "$work/config.json" --out "$work/alone" --max-pack 1 --fuse never --keep-checkpoints all \
  --quiet > /dev/null
"$packtune" run "$work/config.json" --out "$work/packed" --max-pack 4 --fuse always --keep-checkpoints all \
  --quiet > /dev/null

"$py" "$compare" "$work/alone/results.jsonl" "$work/packed/results.jsonl" --tolerance 2e-3
"$py" - "$work" <<'PY'
import glob, json, sys
import h5py
import numpy as np
work = sys.argv[1]
def reports(name):
    return {(r["trial"], r["budget"]): r for r in map(json.loads, open(f"{work}/{name}/results.jsonl"))}
alone, packed = reports("alone"), reports("packed")
assert alone.keys() == packed.keys() and len(alone) == 8, (sorted(alone), sorted(packed))
assert all(r["unit_size"] == 1 for r in alone.values()), "alone: every unit of one"
assert all(r["unit_size"] == 4 for r in packed.values()), \
    f"packed: one fused unit of all 4, got unit sizes {sorted(r['unit_size'] for r in packed.values())}"
assert {r["config"]["channels"] for r in alone.values()} == {6, 8}, "the trials should differ in channels"
trial_channels = {t: r["config"]["channels"] for (t, _), r in alone.items()}
worst = {"parameters": 0.0, "running statistics": 0.0}
tensors = 0
for trial in sorted({t for t, _ in alone}):
    paths = [glob.glob(f"{work}/{name}/checkpoints/trial-{trial}-budget-60*.h5") for name in ("alone", "packed")]
    assert all(len(p) == 1 for p in paths), paths
    files = [h5py.File(p[0], "r") for p in paths]
    a, b = (f["model"] for f in files)
    assert sorted(a) == sorted(b) and "0.weight" in a, (sorted(a), sorted(b))
    for name in a:
        x, y = np.asarray(a[name], dtype=np.float64), np.asarray(b[name], dtype=np.float64)
        assert x.shape == y.shape, (trial, name, x.shape, y.shape)
        d = float(np.abs(x - y).max()) if x.size else 0.0
        kind = "running statistics" if "running_" in name else "parameters"
        worst[kind] = max(worst[kind], d)
        tensors += 1
        assert d <= (1e-2 if "running_" in name else 2e-3), f"trial {trial} {name}: differs by {d}"
        if trial_channels[trial] == 8:
            assert d == 0, f"trial {trial} (8 channels, unpadded) {name}: differs by {d}"
print(f"1 passed, 0 failed: 8 reports and {tensors} final tensors agree alone and fused in a unit of 4; "
      f"largest differences: parameters {worst['parameters']:.2e}, "
      f"running statistics {worst['running statistics']:.2e}")
PY
