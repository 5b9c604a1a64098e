#!/usr/bin/env bash
# Packing never changes results: the same 8 trials of three widths and three optimizers,
# trained one at a time as plain models (--max-pack 1 --fuse never) and as one fused unit of 8
# padded to the widest member (--max-pack 8 --fuse always), report the same metrics within 1e-3.
set -euo pipefail
packtune="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat > "$work/config.json" <<'JSON'
{
  "seed": 21,
  "budget": {"unit": "epochs", "max": 0.5, "report_every": 0.25},
  "tuner": {"name": "random", "trials": 8},
  "actors": 1,
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

/usr/bin/python3 - "$work" <<'PY'
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
