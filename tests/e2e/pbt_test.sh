#!/usr/bin/env bash
# Population-based training in `packtune run` (docs/tuners.md, pbt): a population of 4 MLPs on
# a small slice, exploiting every quarter epoch.
# - On one actor the population trains as one fused unit and every exploit happens inside it:
#   the actor copies the donor's rows (its log says so for each exploit results.jsonl records).
#   With the population over two actors some go through the checkpoint store, and with room
#   for half of it (--max-pack 2) the parked members leave for the others; one at a time
#   (--max-pack 1) every exploit goes through the store. All give the same reports bit for bit.
# - Exploits happen, and each is what results.jsonl says: the member's first report after it
#   names its donor and the donor's budget, the donor had reported there, and the member's
#   config is the donor's but for the perturbed values; the member's checkpoint at that budget
#   holds the donor's tensors under the member's id and config.
# - Fused (--fuse always; how many share a unit depends on when jobs arrive) and one at a
#   time (--max-pack 1) report the same numbers bit for bit: the members are of one width
#   (docs/reproducibility.md).
# - A driver killed with kill -9 between journaling its first exploit and copying the donor's
#   checkpoint, while that exploit waits for an actor, and mid-run, then resumed, ends with the
#   same reports and lineage bit for bit.
# - `packtune export` carries the lineage, and report.html draws it and the lr schedule (with
#   chromium, as tests/e2e/report_test.sh opens pages).
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

cat > "$work/config.json" <<'JSON'
{
  "seed": 5,
  "budget": {"unit": "epochs", "min": 0.25, "max": 1.25, "report_every": 0.25},
  "tuner": {"name": "pbt", "population": 4, "interval": 0.25, "perturb": ["lr", "momentum"]},
  "actors": 1,
  "threads_per_actor": 2,
  "data": {"train_size": 2048, "validation_size": 512},
  "model": {"family": "mlp", "depth": 1, "width": 64, "batch_size": 64, "optimizer": "sgd"},
  "space": {
    "lr": {"type": "loguniform", "low": 0.002, "high": 0.2},
    "momentum": {"type": "uniform", "low": 0.0, "high": 0.9}
  }
}
JSON
"$packtune" run "$work/config.json" --out "$work/ref" --fuse always --keep-checkpoints all --quiet > "$work/ref.out" 2>&1 ||
  fail "the run failed" "$work/ref.out"
"$packtune" run "$work/config.json" --out "$work/alone" --max-pack 1 --quiet > "$work/alone.out" 2>&1 ||
  fail "the run with --max-pack 1 failed" "$work/alone.out"
"$packtune" run "$work/config.json" --out "$work/two" --actors 2 --fuse always --quiet > "$work/two.out" 2>&1 ||
  fail "the run on two actors failed" "$work/two.out"
"$packtune" run "$work/config.json" --out "$work/half" --max-pack 2 --fuse always --quiet > "$work/half.out" 2>&1 ||
  fail "the run with --max-pack 2 failed" "$work/half.out"

"$py" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
rows = [json.loads(l) for l in open(f"{work}/ref/results.jsonl")]
assert len(rows) == 20, f"4 members x 5 reports, got {len(rows)}"
assert max(r["unit_size"] for r in rows) > 1, "the population should train fused"
by = {(r["trial"], r["budget"]): r for r in rows}
exploits = [r for r in rows if "exploit" in r]
# pbt's default quantile 0.25 of 4: one member a generation, at 0.25, 0.5, 0.75 and 1.0.
assert len(exploits) == 4, f"expected 4 exploits, got {len(exploits)}"
for r in exploits:
    donor, at = r["exploit"]["from_trial"], r["exploit"]["from_budget"]
    assert donor != r["trial"] and (donor, at) in by, r
    assert abs(r["budget"] - at - 0.25) < 1e-9, f"the first report after an exploit is the next generation's: {r}"
    own = by[(r["trial"], at)]
    assert own["val_accuracy"] <= by[(donor, at)]["val_accuracy"], "the worse member takes the better one's weights"
    d = by[(donor, at)]["config"]
    for k, v in r["config"].items():
        assert k in ("lr", "momentum") or d[k] == v, f"{k} is not perturbed: {v} against the donor's {d[k]}"
    assert r["config"] != d, "explore changes the donor's config"
print(f"1 passed, 0 failed: {len(exploits)} exploits recorded, each from a better member's checkpoint")

# The best is the best member of the final population, and the test measured its final model.
best = json.load(open(f"{work}/ref/best.json"))
final = [r for r in rows if abs(r["budget"] - 1.25) < 1e-9]
top = max(r["val_accuracy"] for r in final)
assert best["budget"] == 1.25 and best["value"] == top, (best, top)
assert best["test"]["trial"] == best["trial"] and best["test"]["budget"] == 1.25, best
print(f"1 passed, 0 failed: best.json names trial {best['trial']}, the best at budget.max ({top}), tested")

# Inside the unit: the actor's line for each exploit, and none for a load from a file.
import glob, re
lines = [l for f in glob.glob(f"{work}/ref/logs/actor-*.log") for l in open(f)]
in_unit = set()
for l in lines:
    m = re.search(r"trial (\d+) goes on in unit \S+ from trial (\d+)'s weights at budget (\S+),", l)
    if m:
        in_unit.add((int(m[1]), int(m[2]), float(m[3])))
want = {(r["trial"], r["exploit"]["from_trial"], r["exploit"]["from_budget"]) for r in exploits}
assert in_unit == want, f"exploits inside the unit {sorted(in_unit)}, recorded {sorted(want)}"
loaded = [l for l in lines if "resumed from" in l]
assert not loaded, f"one actor's unit loads no checkpoint: {loaded}"
print(f"1 passed, 0 failed: all {len(want)} exploits copied rows inside the unit")
PY
for run in alone two half; do "$py" "$compare" "$work/ref/results.jsonl" "$work/$run/results.jsonl"; done

# The copy is the donor's state under the member's name (--keep-checkpoints all keeps both).
"$py" - "$work" <<'PY'
import json, sys
import h5py, numpy
work = sys.argv[1]
exploits = [r for r in map(json.loads, open(f"{work}/ref/results.jsonl")) if "exploit" in r]
def tensors(f):
    out = {}
    f.visititems(lambda name, item: out.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None)
    return out
for r in exploits:
    donor, at = r["exploit"]["from_trial"], r["exploit"]["from_budget"]
    with h5py.File(f"{work}/ref/checkpoints/trial-{r['trial']}-budget-{at:g}.h5", "r") as copy, \
         h5py.File(f"{work}/ref/checkpoints/trial-{donor}-budget-{at:g}.h5", "r") as original:
        assert copy.attrs["trial"] == r["trial"] and copy.attrs["step"] == original.attrs["step"], dict(copy.attrs)
        a, b = tensors(copy), tensors(original)
        assert a.keys() == b.keys() and a, (sorted(a), sorted(b))
        for name in a:
            assert numpy.array_equal(a[name], b[name]), f"trial {r['trial']}'s {name} is not trial {donor}'s"
        assert json.loads(copy.attrs["config"])["lr"] == r["config"]["lr"], "the copy holds the member's new config"
print(f"1 passed, 0 failed: each of the {len(exploits)} copies holds its donor's weights and optimizer state")
PY

# The lineage leaves results.jsonl for the CSV export and the report's population charts.
"$packtune" export "$work/ref" > "$work/ref.csv"
"$py" - "$work" <<'PY'
import csv, json, sys
work = sys.argv[1]
rows = list(csv.DictReader(open(f"{work}/ref.csv", newline="")))
lines = [json.loads(l) for l in open(f"{work}/ref/results.jsonl")]
got = [(r["trial"], float(r["budget"]), r["exploit.from_trial"], float(r["exploit.from_budget"]))
       for r in rows if r["exploit.from_trial"]]
want = [(str(l["trial"]), l["budget"], str(l["exploit"]["from_trial"]), l["exploit"]["from_budget"])
        for l in lines if "exploit" in l]
assert got == want, (got, want)
print(f"1 passed, 0 failed: the CSV export carries the {len(got)} exploits")
PY
browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -n "$browser" ]; then
  timeout 120 "$browser" --headless --disable-gpu --no-sandbox --enable-unsafe-swiftshader \
    --user-data-dir="$work/chrome" --proxy-server=127.0.0.1:9 --virtual-time-budget=15000 \
    --dump-dom "file://$work/ref/report.html" > "$work/dom.html" 2> "$work/chrome.log" ||
    fail "chromium --dump-dom" "$work/chrome.log"
  "$py" - "$work" "$here" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from page_check import read_check
check = read_check(open(f"{sys.argv[1]}/dom.html", encoding="utf8").read(), "report-check")
assert check and check["errors"] == [], f"the page's check: {check}"
charts = check["charts"]
assert charts.get("lineage", 0) > 0 and charts.get("schedule-lr", 0) > 0, f"population charts drawn: {charts}"
print(f"1 passed, 0 failed: report.html draws the lineage ({charts['lineage']} points) and the lr schedule")
PY
else
  echo "skipped: report.html's population charts (no chromium)"
fi

kill_and_resume() {
  local name="$1" point="$2"
  PACKTUNE_TEST_HOLD="$point:$work/$name.hold" \
    "$packtune" run "$work/config.json" --out "$work/$name" --fuse always --quiet > "$work/$name.out" 2>&1 &
  local driver=$!
  pids+=("$driver")
  wait_held "$work/$name.hold" "$driver" || fail "$name: the run never reached $point" "$work/$name.out"
  kill -9 "$driver"
  wait "$driver" 2>/dev/null || true
  "$packtune" run --resume "$work/$name" > "$work/$name.resumed" 2>&1 || fail "$name: resume failed" "$work/$name.resumed"
  grep -q "resuming" "$work/$name.resumed" || fail "$name: no resume" "$work/$name.resumed"
  "$py" "$compare" "$work/ref/results.jsonl" "$work/$name/results.jsonl"
}
# Between the commit of the first exploit's job and its copy: the resume makes the copy.
kill_and_resume copy driver.exploit
# The first generation is 4 jobs; the fifth Assign is the first exploit (pbt queues them first).
kill_and_resume exploit "actor.assigned#5"
kill_and_resume mid_run "driver.reported#11"
echo "1 passed, 0 failed: killed three times and resumed, the same reports bit for bit"
