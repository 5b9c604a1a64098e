#!/usr/bin/env bash
# Re-planning at rung boundaries (docs/planner.md): a Hyperband sweep (17 trials, eta 3, 0.25 to
# 2.25 epochs, reports every 0.25) on two actors in fused units, with "replan" on (the default)
# and off. With it on the driver says it re-planned each rung's promoted trials; in both runs a
# trial keeps its actor and unit for a whole job (it moves only at rung boundaries), no trial
# reports a budget twice, every job the tuner gave reaches its budget with a final report, and
# the two runs report the same metrics within 2e-3.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

cat > "$work/on.json" <<'JSON'
{
  "seed": 7,
  "budget": {"unit": "epochs", "min": 0.25, "max": 2.25, "report_every": 0.25},
  "tuner": {"name": "hyperband", "eta": 3},
  "actors": 2,
  "max_pack": 4,
  "fuse": "always",
  "evaluate_test": false,
  "data": {"train_size": 3000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 1, "width": 32, "batch_size": 64, "optimizer": "adam"},
  "space": {
    "lr": {"type": "loguniform", "low": 0.0005, "high": 0.02},
    "width": {"type": "choice", "values": [32, 48, 64]},
    "dropout": {"type": "uniform", "low": 0.0, "high": 0.3}
  }
}
JSON
"$py" -c '
import json, sys
c = json.load(open(sys.argv[1])); c["replan"] = False
json.dump(c, open(sys.argv[2], "w"))' "$work/on.json" "$work/off.json"

"$packtune" run "$work/on.json" --out "$work/on" > "$work/on.log" 2>&1 || { cat "$work/on.log"; exit 1; }
"$packtune" run "$work/off.json" --out "$work/off" > "$work/off.log" 2>&1 || { cat "$work/off.log"; exit 1; }

"$py" - "$work" <<'PY'
import json, sys
from collections import defaultdict
work = sys.argv[1]

def load(name):
    rows = [json.loads(l) for l in open(f"{work}/{name}/results.jsonl")]
    jobs = [json.loads(l)["job"] for l in open(f"{work}/{name}/journal.jsonl") if '"job"' in l]
    return rows, jobs

def check(name):
    rows, jobs = load(name)
    seen = set()
    for r in rows:
        key = (r["trial"], r["budget"])
        assert key not in seen, f"{name}: trial {key[0]} reported budget {key[1]} twice"
        seen.add(key)
    budgets = defaultdict(list)  # trial -> its jobs' budgets, in order
    for j in jobs:
        budgets[j["trial"]].append(j["budget"])
    assert len(budgets) == 17 and len(jobs) == 22, f"{name}: {len(budgets)} trials, {len(jobs)} jobs"
    promoted = sum(1 for j in jobs if j["kind"] == "resume")
    assert promoted == 5, f"{name}: {promoted} promotions"
    where = {}  # (trial, job budget) -> (actor, unit) of its reports
    for r in rows:
        job = min(b for b in budgets[r["trial"]] if b >= r["budget"] - 1e-9)
        at = (r["actor"], r["unit"])
        assert r.get("unit"), f"{name}: trial {r['trial']} budget {r['budget']} names no unit"
        first = where.setdefault((r["trial"], job), at)
        assert first == at, (f"{name}: trial {r['trial']} moved inside its job to budget {job}: "
                             f"actor/unit {first} then {at} at budget {r['budget']}")
    for t, bs in budgets.items():
        for b in bs:
            assert any(r["trial"] == t and abs(r["budget"] - b) < 1e-9 and r["final"] for r in rows), \
                f"{name}: trial {t} never finished its job to budget {b}"
    return {(r["trial"], r["budget"]): r for r in rows}

on, off = check("on"), check("off")
log_on, log_off = open(f"{work}/on/driver.log").read(), open(f"{work}/off/driver.log").read()
assert "rung boundary:" in log_on, "replan on: no rung boundary was re-planned"
assert "rung boundary:" not in log_off, "replan off: the driver re-planned anyway"
assert on.keys() == off.keys(), (sorted(set(on) ^ set(off)))
worst = 0.0
for key in on:
    for metric in ("val_loss", "val_accuracy", "train_loss"):
        d = abs(on[key][metric] - off[key][metric])
        worst = max(worst, d)
        assert d <= 2e-3, f"trial {key[0]} budget {key[1]} {metric}: {on[key][metric]} vs {off[key][metric]}"
moves = sum(1 for l in log_on.splitlines() if "rung boundary:" in l)
print(f"1 passed, 0 failed: {len(on)} reports agree with replan off (largest difference {worst:.2e}); "
      f"{moves} rung boundaries re-planned; trials kept actor and unit within each job")
PY
