#!/usr/bin/env bash
# A real `packtune run`: two actors, random search, a small slice of Fashion-MNIST.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

cat > "$work/config.json" <<'JSON'
{
  "seed": 5,
  "budget": {"unit": "epochs", "max": 1, "report_every": 0.5},
  "tuner": {"name": "random", "trials": 3},
  "actors": 1,
  "data": {"train_size": 3000, "validation_size": 1000},
  "model": {"family": "mlp", "depth": 1, "width": 64, "batch_size": 64, "optimizer": "adam"},
  "space": {
    "lr": {"type": "loguniform", "low": 0.001, "high": 0.01},
    "family": {"type": "choice", "values": ["mlp", "cnn"]}
  }
}
JSON
# --actors and --trials override the config.
"$packtune" run "$work/config.json" --out "$work/out" --actors 2 --trials 4 --quiet > "$work/stdout"
"$packtune" export "$work/out" --csv --output "$work/results.csv"

"$py" - "$work/out" "$work/stdout" "$work/results.csv" "$here/../../src/experiment/results_folder.hpp" <<'PY'
import csv, json, os, re, sys
out, stdout, exported, names_header = sys.argv[1:5]
# Everything the run wrote is declared in results_folder.hpp, which a new run refuses to find.
declared = set(re.findall(r'string_view k\w+ = "([^"]+)"', open(names_header).read()))
assert {"journal.jsonl", "results.jsonl", "checkpoints"} <= declared, declared
assert set(os.listdir(out)) <= declared, set(os.listdir(out)) - declared
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
trials = {r["trial"] for r in rows}
assert trials == {0, 1, 2, 3}, trials
for r in rows:
    assert isinstance(r["trial"], int) and isinstance(r["budget"], (int, float)), r
    assert 0.0 <= r["val_accuracy"] <= 1.0 and r["val_loss"] > 0, r
    assert "wall_time" in r and "actor" in r, r
budgets = sorted({r["budget"] for r in rows})
assert budgets == [0.5, 1.0], budgets
finals = [r for r in rows if r["final"]]
assert len(finals) == 4, finals
assert {r["actor"] for r in rows} == {0, 1}, "both actors should train"
best = json.load(open(f"{out}/best.json"))
assert best["metric"] == "val_accuracy"
top = max(r["val_accuracy"] for r in rows)
assert abs(best["value"] - top) < 1e-12, (best, top)
assert best["config"]["family"] in ("mlp", "cnn") and "lr" in best["config"]
assert top > 0.6, f"4 trials on 3000 images should pass 60% accuracy, got {top}"
text = open(stdout).read()
assert f"best trial {best['trial']}" in text, text
# The CSV export: one row per report, the same values, the config in columns of its own.
table = list(csv.DictReader(open(exported, newline="")))
assert len(table) == len(rows), (len(table), len(rows))
for r, c in zip(rows, table):
    assert int(c["trial"]) == r["trial"] and float(c["budget"]) == r["budget"], (r, c)
    assert float(c["val_accuracy"]) == r["val_accuracy"] and c["final"] == str(r["final"]).lower(), (r, c)
    assert float(c["config.lr"]) == r["config"]["lr"] and c["config.family"] == r["config"]["family"], (r, c)
print(f"1 passed, 0 failed: {len(rows)} reports, best {top:.4f}")
PY
