#!/usr/bin/env bash
# Packing never changes results: the same 8 trials of three widths and three optimizers,
# trained one at a time as fused units of one (--max-pack 1 --fuse never) and as one fused unit of 8
# padded to the widest member (--max-pack 8 --fuse always), report the same metrics within 1e-3;
# trials of one width, alone and in one unit of 8, bit for bit (MLP and CNN). On 2 threads, so
# that a lone product is split among threads while a unit's products are not: with PyPI's
# LibTorch this holds only in MKL's strict mode (docs/reproducibility.md, Many threads).
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

cat > "$work/config.json" <<'JSON'
{
  "seed": 21,
  "budget": {"unit": "epochs", "max": 0.5, "report_every": 0.25},
  "tuner": {"name": "random", "trials": 8},
  "actors": 1,
  "threads_per_actor": 2,
  "data": {"train_size": 2048, "validation_size": 512},
  "model": {"family": "mlp", "depth": 1, "width": 64, "batch_size": 64, "optimizer": "sgd"},
  "space": {
    "lr": {"type": "loguniform", "low": 0.002, "high": 0.05},
    "width": {"type": "choice", "values": [32, 64, 96]},
    "optimizer": {"type": "choice", "values": ["sgd", "adam", "adamw"]},
    "momentum": {"type": "uniform", "low": 0.0, "high": 0.9},
    "dropout": {"type": "uniform", "low": 0.1, "high": 0.4}
  }
}
JSON
"$packtune" run "$work/config.json" --out "$work/alone" --max-pack 1 --fuse never --quiet > /dev/null
"$packtune" run "$work/config.json" --out "$work/packed" --max-pack 8 --fuse always --quiet > /dev/null

"$py" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def reports(name):
    rows = [json.loads(l) for l in open(f"{work}/{name}/results.jsonl")]
    return {(r["trial"], r["budget"]): r for r in rows}
alone, packed = reports("alone"), reports("packed")
assert alone.keys() == packed.keys() and len(alone) == 16, (sorted(alone), sorted(packed))
assert all(r["unit_size"] == 1 for r in alone.values()), "alone: every unit of one"
assert all(r["unit_size"] == 8 for r in packed.values()), "packed: one unit of all 8"
for key in ("width", "optimizer"):
    assert len({r["config"][key] for r in alone.values()}) > 1, f"the trials should differ in {key}"
worst = 0.0
for key in alone:
    for metric in ("val_loss", "val_accuracy", "train_loss"):
        d = abs(alone[key][metric] - packed[key][metric])
        worst = max(worst, d)
        assert d <= 1e-3, f"trial {key[0]} budget {key[1]} {metric}: {alone[key][metric]} vs {packed[key][metric]}"
print(f"1 passed, 0 failed: 16 reports agree, largest difference {worst:.2e}")
PY

# Trials of one width: trained alone (--max-pack 1, each a unit of one) and as one fused unit
# of 8 (no padding), the same numbers bit for bit, for an MLP and a CNN with batch norm
# (docs/reproducibility.md). Optimizers, learning rates, momentum and dropout differ. The MLP
# again with each trial reading the data in its own order (data.order per_trial): the members
# of the unit then read different batches. Both MLPs train 1.5 epochs, into a second order.
for family in mlp cnn mlp_own_order; do
  "$py" - "$work/config.json" "$work/$family.json" "$family" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
del c["space"]["width"]
if sys.argv[3] == "cnn":
    c["model"].update({"family": "cnn", "depth": 2, "channels": 4, "width": 16, "batch_norm": True})
    c["data"]["train_size"] = 1024
if sys.argv[3].startswith("mlp"):
    c["budget"].update({"max": 1.5, "report_every": 0.75})  # across an epoch's end
if sys.argv[3] == "mlp_own_order":
    c["data"]["order"] = "per_trial"
json.dump(c, open(sys.argv[2], "w"))
PY
  "$packtune" run "$work/$family.json" --out "$work/$family-alone" --max-pack 1 --quiet > /dev/null
  "$packtune" run "$work/$family.json" --out "$work/$family-packed" --max-pack 8 --fuse always --quiet > /dev/null
  "$py" - "$work" "$family" <<'PY'
import json, sys
work, family = sys.argv[1], sys.argv[2]
def reports(name):
    return {(r["trial"], r["budget"]): r for r in map(json.loads, open(f"{work}/{family}-{name}/results.jsonl"))}
alone, packed = reports("alone"), reports("packed")
assert alone.keys() == packed.keys() and len(alone) == 16, (sorted(alone), sorted(packed))
assert all(r["unit_size"] == 1 for r in alone.values()), "alone: every unit of one"
assert all(r["unit_size"] == 8 for r in packed.values()), "packed: one unit of all 8"
assert len({r["config"]["optimizer"] for r in alone.values()}) > 1, "the trials should differ in optimizer"
for key in alone:
    for metric in ("val_loss", "val_accuracy", "train_loss"):
        assert alone[key][metric] == packed[key][metric], \
            f"{family} trial {key[0]} budget {key[1]} {metric}: {alone[key][metric]!r} vs {packed[key][metric]!r}"
print(f"1 passed, 0 failed: {family}: 16 reports of one width equal bit for bit alone and in a unit of 8")
PY
done
"$py" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def losses(name):
    return {(r["trial"], r["budget"]): r["train_loss"] for r in map(json.loads, open(f"{work}/{name}/results.jsonl"))}
shared, own = losses("mlp-alone"), losses("mlp_own_order-alone")
assert shared.keys() == own.keys()
differ = sum(shared[k] != own[k] for k in shared)
assert differ == len(shared), f"per_trial order: only {differ} of {len(shared)} reports differ from the shared order's"
print("1 passed, 0 failed: mlp_own_order: every report differs from the shared order's")
PY
