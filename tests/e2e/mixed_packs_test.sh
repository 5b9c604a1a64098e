#!/usr/bin/env bash
# mixed_packs on CPU actors: with "auto" (the default) an actor trains one unit at a time, so
# no two jobs of one actor overlap in time; with "always" the same experiment packs trials
# that do not fuse side by side (the check that the first run's figure can fail). Both runs
# report the same metrics (training is deterministic per trial), and the driver says why.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

cat > "$work/config.json" <<'JSON'
{
  "seed": 5,
  "budget": {"unit": "epochs", "max": 0.5, "report_every": 0.25},
  "tuner": {"name": "random", "trials": 6},
  "actors": 1,
  "max_pack": 4,
  "fuse": "never",
  "evaluate_test": false,
  "data": {"train_size": 2000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 1, "width": 32, "batch_size": 64, "optimizer": "adam"},
  "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01},
            "width": {"type": "choice", "values": [32, 64]}}
}
JSON
"$packtune" run "$work/config.json" --out "$work/auto" > "$work/auto.log" 2>&1 || { cat "$work/auto.log"; exit 1; }
"$packtune" run "$work/config.json" --out "$work/always" --mixed-packs always > "$work/always.log" 2>&1 ||
  { cat "$work/always.log"; exit 1; }
grep -q "cpu actors train one unit" "$work/auto/driver.log" || { echo "FAILED: the driver did not say why"; exit 1; }
if grep -q "cpu actors train one unit" "$work/always/driver.log"; then echo "FAILED: 'always' said one unit"; exit 1; fi

"$py" - "$work" <<'PY'
import json, sys
work = sys.argv[1]

def jobs(name):
    """(start, end) of each job on the one actor: from its assignment to its final report."""
    rows = [json.loads(l) for l in open(f"{work}/{name}/results.jsonl")]
    spans = {}
    for r in rows:
        s = spans.setdefault(r["trial"], [r["job_start"], r["wall_time"]])
        s[1] = max(s[1], r["wall_time"])
    return rows, sorted(spans.values())

def most_at_once(spans):
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    now = best = 0
    for _, d in events:
        now += d
        best = max(best, now)
    return best

auto_rows, auto = jobs("auto")
always_rows, always = jobs("always")
assert len(auto) == 6 and len(always) == 6, (len(auto), len(always))
assert most_at_once(auto) == 1, f"auto: {most_at_once(auto)} jobs at once on one CPU actor: {auto}"
assert most_at_once(always) > 1, f"always: jobs never overlapped: {always}"
a = {(r["trial"], r["budget"]): r["val_accuracy"] for r in auto_rows}
b = {(r["trial"], r["budget"]): r["val_accuracy"] for r in always_rows}
assert a.keys() == b.keys(), (sorted(a), sorted(b))
worst = max(abs(a[k] - b[k]) for k in a)
assert worst < 2e-3, f"reports differ by {worst}"
print(f"auto: one job at a time; always: up to {most_at_once(always)} at once; same {len(a)} reports")
PY
